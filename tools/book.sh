#!/usr/bin/env bash
# Set up (if needed) and build the HTML book into _build/html.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
export HF_HUB_DISABLE_PROGRESS_BARS=1
.venv/bin/jupyter-book build --warningiserror --keep-going .
echo "book: $(pwd)/_build/html/index.html"
