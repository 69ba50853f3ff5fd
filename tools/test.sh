#!/usr/bin/env bash
# Set up (if needed) and run every test: vitlab's unit tests, then the notebooks under nbval.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/setup-browser.sh  # headless Chromium for the book's browser test
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1} HF_HUB_DISABLE_PROGRESS_BARS=1 TORCHINDUCTOR_COMPILE_THREADS=1

.venv/bin/pytest tests/

status=0
.venv/bin/pytest --nbval --nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg notebooks/ || status=$?
if [ "$status" -eq 5 ]; then
    echo "nbval: no notebooks collected in notebooks/ yet"
    status=0
fi
exit "$status"
