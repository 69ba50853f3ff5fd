"""The GPU lane: run the chapters on a lent machine within a time budget, and import what comes back. Torch-free.

    python3 -m vitlab.book.lane machine                       what the machine is (one block, for the log)
    python3 -m vitlab.book.lane run --out DIR [--backend cuda --preset gpu --budget 540 --chapters 01 02 04]
    python3 -m vitlab.book.lane check DIR [--backend cuda --chapters 01 02 04]   the files a run left, checked
    python3 -m vitlab.book.lane import DIR                    the returned files -> book/<stack>/<backend>/, rows

tools/device-run.sh sets the machine up (carried wheels, a kernelspec) and calls `run`; tools/device-import.sh
calls `import`. Each chapter is one `vitlab run --summary` under a cap, so one runaway chapter cannot eat the
others' time; at its cap it gets SIGINT (papermill stops its kernel), 20 s later SIGKILL, and any process it
left (the kernel runs in a session of its own) is ended by a tag only its processes carry in their environment.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from vitlab.contract import layout
from vitlab.contract.chapters import GPU_CHAPTERS, matches, notebooks
from vitlab.contract.store import append, load_file

# The machine report's key packages that the GPU image lacks (all of them, pinned: requirements/gpu-wheels.txt).
IMAGE_LACKS = ("papermill", "nbclient", "nbformat", "jupyter_client", "ipykernel", "torchao")
FINISH_S = 25   # kept at the end: the last chapter's SIGKILL grace and copying the files out
MIN_RUN_S = 30  # a chapter is not started with less than this left
KILL_GRACE_S = 20
MAX_FILE = 16 << 20  # what the device tool brings back per file


@dataclass
class ChapterRun:
    """How one chapter's run on the lane ended."""

    name: str
    state: str          # ok | FAILED | TIMEOUT | SKIPPED
    seconds: float
    rows: int = 0
    detail: str = ""

    def line(self) -> str:
        return f"{self.name:<26} {self.state:<8} {self.seconds:5.0f} s  {self.rows:4d} rows  {self.detail}".rstrip()


def failed_copy(name: str) -> str:
    """The file name of a failed chapter's executed part among the returned files (never imported as a page)."""
    return f"{name}.FAILED.ipynb"


def chapter_cap(budget: float, elapsed: float, after: int, reserve: float = 40) -> float | None:
    """Seconds a chapter may run: what is left of `budget` after `elapsed` and FINISH_S, minus `reserve` for each
    of the `after` chapters still to come, at least MIN_RUN_S; None when less than MIN_RUN_S is left at all."""
    left = budget - FINISH_S - elapsed
    if left < MIN_RUN_S:
        return None
    return max(left - reserve * after, MIN_RUN_S)


def chapter_stems(names: list[str], root: Path = layout.ROOT) -> list[str]:
    """Each name (02, 02_torch_compile or torch_compile) as its notebook's stem; unknown names stay as given."""
    stems = [p.stem for p in notebooks(root / "notebooks")]
    return [next((s for s in stems if matches(name, s)), name) for name in names]


def chapters_for(backend: str, names: list[str] | None = None, root: Path = layout.ROOT) -> list[str]:
    """The chapters a lane run on `backend` runs: `names` as stems, else GPU_CHAPTERS on a GPU, every one on the CPU."""
    if names:
        return chapter_stems(names, root)
    if backend != "cpu":
        return chapter_stems(list(GPU_CHAPTERS), root)
    return [p.stem for p in notebooks(root / "notebooks")]


def _end_tagged(tag: str) -> int:
    """Kill every process whose environment carries VITLAB_LANE_TAG=`tag` (by PID, nothing else); how many."""
    ended = 0
    for proc in Path("/proc").glob("[0-9]*"):
        if int(proc.name) == os.getpid():
            continue
        try:
            if f"VITLAB_LANE_TAG={tag}".encode() in (proc / "environ").read_bytes().split(b"\0"):
                os.kill(int(proc.name), signal.SIGKILL)
                ended += 1
        except (OSError, ValueError):
            continue
    return ended


def _sigint_default() -> None:
    """In the chapter's process, before exec: SIGINT back to its default. A background job of a non-interactive shell
    (`cmd &`, nohup) inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler: the cap's SIGINT
    would do nothing and only the SIGKILL KILL_GRACE_S later would end the chapter, without its partial notebook."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_one(command: list[str], cap: float, tag: str, log: Path) -> tuple[int | None, float]:
    """Run `command` (its output to `log`) for at most `cap` s: SIGINT at the cap, SIGKILL KILL_GRACE_S later, then
    whatever carries `tag`. Returns (exit code or None at the cap, seconds)."""
    start = time.monotonic()
    with log.open("w") as out:
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, preexec_fn=_sigint_default,
                                 env={**os.environ, "VITLAB_LANE_TAG": tag})
        try:
            code = child.wait(timeout=cap)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGINT)
            try:
                child.wait(timeout=KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            code = None
    _end_tagged(tag)
    return code, time.monotonic() - start


def run_chapters(chapters: list[str], out: Path, backend: str = "cuda", preset: str = "gpu", budget: float = 540,
                 reserve: float = 40, python: str = sys.executable, root: Path = layout.ROOT) -> list[ChapterRun]:
    """Each chapter as one `vitlab run` into a scratch book under its cap; the files come back flat in `out`:
    NN_name.ipynb per chapter that ran (NN_name.FAILED.ipynb: the executed part of one that failed), the rows
    (<backend>.jsonl), run.log and lane.json (these results)."""
    start = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="vitlab-lane-"))
    scratch = work / "book"
    log = out / "run.log"
    found: list[ChapterRun] = []
    for i, name in enumerate(chapter_stems(chapters, root)):
        cap = chapter_cap(budget, time.monotonic() - start, len(chapters) - i - 1, reserve)
        if cap is None:
            found.append(ChapterRun(name, "SKIPPED", 0, detail=f"no time left of the {budget:.0f} s budget"))
            print(found[-1].line(), flush=True)
            continue
        summary = work / f"{i}.json"
        command = [python, "-m", "vitlab", "run", "--backend", backend, "--preset", preset, "--only", name,
                   "--into", str(scratch), "--summary", str(summary)]
        code, seconds = run_one(command, cap, f"vitlab-lane-{os.getpid()}-{i}", work / f"{i}.log")
        with log.open("a") as combined:
            combined.write(f"===== {name} (exit {code}, {seconds:.0f} s, cap {cap:.0f} s)\n")
            combined.write((work / f"{i}.log").read_text(errors="replace"))
        outcome = json.loads(summary.read_text())[0] if summary.exists() else None
        if code is None:
            run = ChapterRun(name, "TIMEOUT", seconds, detail=f"stopped at its {cap:.0f} s cap")
        elif outcome and outcome["ok"] and code == 0:
            run = ChapterRun(name, "ok", seconds, outcome["rows"])
        else:
            run = ChapterRun(name, "FAILED", seconds, detail=outcome["detail"] if outcome else f"exit {code}")
        found.append(run)
        print(run.line(), flush=True)
    _collect(found, scratch, out, root)
    (out / "lane.json").write_text(json.dumps([asdict(r) for r in found], indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return found


def _collect(found: list[ChapterRun], scratch: Path, out: Path, root: Path) -> None:
    """The executed notebooks (or a failed one's executed part) and the rows, flat in `out`."""
    for run in found:
        page = next(scratch.rglob(f"{run.name}.ipynb"), None)
        partial = next((root / "_build" / "failed").rglob(f"{run.name}.ipynb"), None)
        if page and run.state == "ok":
            shutil.copy(page, out / page.name)
        elif partial and run.state != "SKIPPED":
            shutil.copy(partial, out / failed_copy(run.name))
    for rows in scratch.glob("results/**/*.jsonl"):
        for row in load_file(rows):
            append(row, out / rows.name)
    for path in out.iterdir():
        if path.stat().st_size > MAX_FILE:
            print(f"lane: {path.name} is over {MAX_FILE >> 20} MiB and will not come back", file=sys.stderr)


def import_run(source: Path, root: Path = layout.ROOT) -> list[str]:
    """The files a lane run returned -> the book: each <backend>.jsonl's rows appended (runs already there skipped)
    to that stack's rows file, and the NN_name.ipynb of each chapter lane.json records as ok to that stack's pages.
    ValueError (one line) on bad input."""
    from vitlab.book.runner import stack_of
    book = root / "book"
    rows_files = sorted(source.glob("*.jsonl"))
    if not rows_files:
        raise ValueError(f"no <backend>.jsonl in {source}")
    checked = []  # every file checked before anything is written: bad input changes nothing
    for rows_file in rows_files:
        backend = rows_file.stem
        if backend not in layout.BACKENDS:
            raise ValueError(f"{rows_file.name}: {backend!r} is not a backend ({', '.join(layout.BACKENDS)})")
        rows = load_file(rows_file)
        strays = {r.get("backend") for r in rows} - {backend}
        if strays:
            raise ValueError(f"{rows_file.name} holds rows of {sorted(map(str, strays))}")
        stacks = {stack_of(str(r.get("versions", {}).get("torch"))) for r in rows}
        if len(stacks) != 1:
            raise ValueError(f"{rows_file.name} mixes stacks {sorted(stacks)}: one stack per import")
        checked.append((backend, stacks.pop(), rows))
    if not (source / "lane.json").exists():
        raise ValueError(f"no lane.json in {source}: not what a lane run returns")
    states = {run["name"]: run["state"] for run in json.loads((source / "lane.json").read_text())}
    said = []
    for backend, stack, rows in checked:
        target = layout.rows_file(backend, stack, book)
        have = {r.get("run_id") for r in load_file(target)} if target.exists() else set()
        new = [r for r in rows if r.get("run_id") not in have]
        for row in new:
            append(row, target)
        said.append(f"rows: {len(new)} of {len(rows)} appended to {target.relative_to(root)} ({stack} stack)")
        pages = layout.pages_dir(backend, stack, book)
        for name, state in states.items():
            notebook = source / f"{name}.ipynb"
            if state != "ok" or not notebook.exists():
                if (source / failed_copy(name)).exists():
                    said.append(f"page: {failed_copy(name)} failed there; not imported")
                continue
            pages.mkdir(parents=True, exist_ok=True)
            shutil.copy(notebook, pages / notebook.name)
            said.append(f"page: {(pages / notebook.name).relative_to(root)}")
    return said + ["next: vitlab book   (rebuilds the results page, _toc.yml and the HTML)"]


def check_returned(out: Path, backend: str, names: list[str] | None = None,
                   root: Path = layout.ROOT) -> tuple[list[str], list[str]]:
    """What a lane run left in `out`, against what the device tool brings back and what the run should hold: every
    chapter it ran (chapters_for) has its executed notebook and rows of `backend`, and no others. (lines, problems)"""
    files = sorted(out.iterdir())
    lines = ["returned: " + ", ".join(f"{f.name} ({f.stat().st_size / 1024:.0f} KiB)" for f in files)]
    problems = [f"{len(files)} files in OUT: at most 8 come back"] if len(files) > 8 else []
    problems += [f"{f.name}: not a plain file" for f in files if not f.is_file()]
    problems += [f"{f.name}: over {MAX_FILE >> 20} MiB" for f in files if f.is_file() and f.stat().st_size > MAX_FILE]
    rows_file = out / f"{backend}.jsonl"
    rows = load_file(rows_file) if rows_file.exists() else []
    chapters = [c for c in chapters_for(backend, names, root) if (root / "notebooks" / f"{c}.ipynb").exists()]
    for chapter in chapters:
        mine = [r for r in rows if r.get("notebook") == chapter]
        others = {r.get("backend") for r in mine} - {backend}
        lines.append(f"  {chapter:26} {len(mine):4} rows" + (f", backends {sorted(others)}" if others else ""))
        if not mine:
            problems.append(f"{chapter}: no rows in {rows_file.name}")
        if others:
            problems.append(f"{chapter}: rows of another backend {sorted(others)}")
        if not (out / f"{chapter}.ipynb").exists():
            problems.append(f"{chapter}: no executed notebook came back")
    if not chapters:
        problems.append(f"no chapter matches CHAPTERS={' '.join(names or [])!r}")
    torch_versions = sorted({str(r.get("versions", {}).get("torch")) for r in rows})
    lines.append(f"rows: {len(rows)}, torch {', '.join(torch_versions)}")
    return lines, problems


def machine() -> list[str]:
    """What the lane's machine is: python, torch and its GPU, the packages the chapters need."""
    import importlib.metadata as md
    import platform

    def version(name: str) -> str:
        try:
            return md.version(name)
        except md.PackageNotFoundError:
            return "-"
    lines = [f"python {platform.python_version()} ({sys.executable})"]
    probe = ("import torch; gpu = f'{torch.cuda.get_device_name(0)}, CUDA {torch.version.cuda}' "
             "if torch.cuda.is_available() else 'no GPU'; print(f'torch {torch.__version__} ({gpu})')")
    # in a child interpreter: this package stays torch-free, and a torch that crashes at import cannot take it down
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    lines.append(done.stdout.strip() if done.returncode == 0 else
                 f"torch does not import: {(done.stderr.strip().splitlines() or ['exit ' + str(done.returncode)])[-1]}")
    lines.append("packages: " + ", ".join(f"{n} {version(n)}" for n in
                                          ("torchvision", "transformers", "timm", "numpy") + IMAGE_LACKS))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vitlab.book.lane", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("machine")
    run = commands.add_parser("run")
    run.add_argument("--out", type=Path, required=True)
    run.add_argument("--backend", default="cuda")
    run.add_argument("--preset", default="gpu")
    run.add_argument("--budget", type=float, default=540)
    run.add_argument("--reserve", type=float, default=40)
    run.add_argument("--chapters", nargs="+")
    check = commands.add_parser("check")
    check.add_argument("out", type=Path)
    check.add_argument("--backend", default="cuda")
    check.add_argument("--chapters", nargs="*")
    imported = commands.add_parser("import")
    imported.add_argument("source", type=Path)
    args = parser.parse_args(argv)
    if args.command == "machine":
        print("\n".join(machine()))
        return 0
    if args.command == "check":
        lines, problems = check_returned(args.out, args.backend, args.chapters)
        print("\n".join(lines))
        print("\n".join(f"PROBLEM: {p}" for p in problems) or "dry run: every chapter ran and left rows")
        return 1 if problems else 0
    if args.command == "import":
        try:
            print("\n".join(import_run(args.source)))
        except (ValueError, OSError) as error:
            print(f"vitlab.book.lane import: {error}", file=sys.stderr)
            return 2
        return 0
    chapters = chapters_for(args.backend, args.chapters)
    found = run_chapters(chapters, args.out, args.backend, args.preset, args.budget, args.reserve)
    ok = sum(r.state == "ok" for r in found)
    print(f"lane: {ok} of {len(found)} chapters ok, {sum(r.rows for r in found)} rows; in {args.out}: "
          + " ".join(sorted(p.name for p in args.out.iterdir())))
    return 0 if ok == len(found) else 1


if __name__ == "__main__":
    sys.exit(main())
