#!/usr/bin/env bash
# Put what tools/device-run.sh returned (the device tool's files_at folder) into the book:
#   bash tools/device-import.sh DIR
# DIR/NN_name.ipynb -> book/<stack>/<backend>/, DIR/<backend>.jsonl -> that stack's rows (runs already there
# skipped); the stack comes from the rows' torch by vitlab.book.runner.stack_of. The work is vitlab.book.lane.import_run.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
    echo "usage: bash tools/device-import.sh DIR   (DIR: the files device-run.sh left in \$OUT)" >&2
    exit 2
fi
python=$(command -v python3)
[ -x .venv/bin/python ] && python=.venv/bin/python
PYTHONPATH=$PWD exec "$python" -m vitlab.book.lane import "$1"
