#!/usr/bin/env bash
# Put what tools/device-run.sh returned (the device tool's files_at folder) into the book:
#   bash tools/device-import.sh DIR
# DIR holds, flat: NN_name.ipynb per chapter, <backend>.jsonl (the rows), run.log, and
# NN_name.FAILED.ipynb for a chapter that failed (reported, not imported). The stack comes from
# the rows: torch at requirements/reference.txt's pin is the reference stack, anything else (the
# machine's torch 2.11) the current stack, as vitlab.book.stack() decides for a local run. So:
#   DIR/NN_name.ipynb  ->  book/current/<backend>/NN_name.ipynb   (replaces that chapter's page)
#   DIR/<backend>.jsonl ->  appended to book/results/current/<backend>.jsonl (a run already there is skipped)
# Then `vitlab book` rebuilds the pages; the results page shows each chapter's latest run per backend.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
    echo "usage: bash tools/device-import.sh DIR   (DIR: the files device-run.sh left in \$OUT)" >&2
    exit 2
fi
python=$(command -v python3)
[ -x .venv/bin/python ] && python=.venv/bin/python
PYTHONPATH=$PWD "$python" - "$1" <<'PY'
import json
import shutil
import sys
from pathlib import Path

from vitlab import layout

source = Path(sys.argv[1])
root = layout.ROOT
book = root / "book"
pin = next((line.split("==")[1].strip() for line in (root / "requirements" / "reference.txt").read_text().splitlines()
            if line.startswith("torch==")), None)
rows_files = sorted(p for p in source.glob("*.jsonl"))
if not rows_files:
    sys.exit(f"device-import: no <backend>.jsonl in {source}")
imported_pages, imported_rows = [], 0
for rows_file in rows_files:
    backend = rows_file.stem
    if backend not in layout.BACKENDS:
        sys.exit(f"device-import: {rows_file.name}: {backend!r} is not a backend ({', '.join(layout.BACKENDS)})")
    rows = [json.loads(line) for line in rows_file.read_text().splitlines() if line.strip()]
    strays = {r.get("backend") for r in rows} - {backend}
    if strays:
        sys.exit(f"device-import: {rows_file.name} holds rows of {sorted(strays)}")
    torches = {str(r.get("versions", {}).get("torch")).split("+")[0] for r in rows}
    stacks = {"reference" if t == pin else "current" for t in torches}
    if len(stacks) != 1:
        sys.exit(f"device-import: {rows_file.name} mixes torch {sorted(torches)}: one stack per import")
    stack = stacks.pop()
    target = layout.rows_file(backend, stack, book)
    target.parent.mkdir(parents=True, exist_ok=True)
    have = set()
    if target.exists():
        have = {json.loads(line).get("run_id") for line in target.read_text().splitlines() if line.strip()}
    new = [r for r in rows if r.get("run_id") not in have]
    with target.open("a") as out:
        for row in new:
            out.write(json.dumps(row) + "\n")
    imported_rows += len(new)
    print(f"rows: {len(new)} of {len(rows)} appended to {target.relative_to(root)}"
          + (f" ({len(rows) - len(new)} from runs already there)" if len(new) < len(rows) else "")
          + f"; torch {', '.join(sorted(torches))} -> {stack} stack")
    unknown = sum(r.get("git_sha") in (None, "unknown") for r in new)
    if unknown:
        print(f"rows: {unknown} carry git_sha 'unknown' (the machine gets no .git; next time run with "
              f"VITLAB_GIT_SHA=<commit> bash tools/device-run.sh)")
    pages = layout.pages_dir(backend, stack, book)
    ran = {r.get("notebook") for r in rows}
    for notebook in sorted(source.glob("[0-9][0-9]_*.ipynb")):
        if notebook.name.endswith(".FAILED.ipynb"):
            print(f"page: {notebook.name} failed there; not imported (open it to see where)")
            continue
        if notebook.stem not in ran:
            print(f"page: {notebook.name} left no rows; imported anyway")
        pages.mkdir(parents=True, exist_ok=True)
        shutil.copy(notebook, pages / notebook.name)
        imported_pages.append(str((pages / notebook.name).relative_to(root)))
print("pages: " + (", ".join(imported_pages) or "none"))
print("next: .venv/bin/vitlab book   (rebuilds the results page, _toc.yml and the HTML)")
PY
