#!/usr/bin/env bash
# The main command: set up, run every chapter on this machine's best backend, build the book.
#   bash tools/book.sh            # quick preset (minutes on 2 CPU cores)
#   bash tools/book.sh full       # the seeds' real settings (ViT-B/16 at 224, ...)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-quick}
bash tools/setup.sh
export HF_HUB_DISABLE_PROGRESS_BARS=1
status=0
.venv/bin/vitlab run --backend auto --preset "$preset" || status=$?
if [ "$status" -eq 2 ]; then exit 2; fi  # bad arguments: nothing ran
.venv/bin/vitlab book
exit "$status"
