#!/usr/bin/env bash
# Set up (if needed) and run the tests of one environment ("lane"):
#   bash tools/test.sh            reference: pytest tests/, then pytest --nbval notebooks/ (strict)
#   bash tools/test.sh current    current stack (torch 2.14, no IPEX): pytest tests/, then every
#                                 notebook executed by papermill (vitlab run, into a scratch folder)
set -euo pipefail
cd "$(dirname "$0")/.."
lane=${1:-reference}
bash tools/setup.sh "$lane"
venv=.venv; [ "$lane" = current ] && venv=.venv-current
bash tools/setup-browser.sh  # headless Chromium for the book's browser test
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1} HF_HUB_DISABLE_PROGRESS_BARS=1

# The book is built with .venv (tools/book.sh), so its build tests (marker `book_build`) run in the reference lane.
if [ "$lane" = current ]; then
    "$venv/bin/pytest" tests/ -m "not timing and not book_build"
else
    "$venv/bin/pytest" tests/
fi
# The wall-clock checks (pytest marker `timing`): run and reported, but a loaded machine does not fail the lane.
"$venv/bin/pytest" tests/ -m timing -q || echo "test.sh: timing checks failed (reported, not gating); see above"

if [ "$lane" = current ]; then
    scratch=$(mktemp -d)
    "$venv/bin/vitlab" run --backend cpu --preset quick --into "$scratch"
    "$venv/bin/vitlab" check-rows --stack current "$scratch"
    exit 0
fi

status=0
"$venv/bin/pytest" --nbval --nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg notebooks/ || status=$?
if [ "$status" -eq 5 ]; then
    echo "nbval: no notebooks collected in notebooks/ yet"
    status=0
fi
exit "$status"
