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

"$venv/bin/pytest" tests/

if [ "$lane" = current ]; then
    scratch=$(mktemp -d)
    "$venv/bin/vitlab" run --backend cpu --preset quick --into "$scratch"
    "$venv/bin/python" - "$scratch" <<'PY'
import sys
from pathlib import Path
from vitlab import layout, results
rows = results.load(layout.rows_dir("current", Path(sys.argv[1])))
stacks = {r["versions"]["torch"] for r in rows}
print(f"current lane: {len(rows)} result rows from {len({r['notebook'] for r in rows})} notebooks, torch {', '.join(sorted(stacks))}")
problems = results.baseline_problems(rows) + [f"skipped row with a timing: {r['variant']}" for r in rows
                                              if r.get("skipped") and r.get("median_ms") is not None]
print("\n".join(problems) or "every comparison group has exactly one baseline row")
sys.exit(0 if rows and not problems and all(r["versions"]["ipex"] is None for r in rows) else 1)
PY
    exit 0
fi

status=0
"$venv/bin/pytest" --nbval --nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg notebooks/ || status=$?
if [ "$status" -eq 5 ]; then
    echo "nbval: no notebooks collected in notebooks/ yet"
    status=0
fi
exit "$status"
