"""The book pipeline: papermill runs the chapters per backend, Jupyter Book renders them."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import yaml

from vitlab.report import BOOK_BACKENDS, write_results_page
from vitlab.results import append, git_sha, load, load_file as load_rows

ROOT = Path(__file__).resolve().parent.parent
PRESET_CHOICES = ("quick", "full")


def chapters(root: Path = ROOT) -> list[Path]:
    """The chapter notebooks, in order (notebooks/NN_*.ipynb)."""
    return sorted(p for p in (root / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def select(names: list[str] | None, root: Path = ROOT) -> list[Path]:
    """Chapters matching `names` (a stem, its number or the part after it); KeyError names the choices."""
    every = chapters(root)
    if not names:
        return every
    picked = []
    for name in names:
        stem = Path(name).stem
        match = [p for p in every if stem in (p.stem, p.stem[:2], p.stem[3:])]
        if not match:
            raise KeyError(f"unknown notebook {name!r}: choose from {', '.join(p.stem for p in every)}")
        picked += [p for p in match if p not in picked]
    return picked


@dataclass
class Outcome:
    """How one notebook's run ended."""

    notebook: str
    ok: bool
    seconds: float
    detail: str = ""

    def __str__(self) -> str:
        state = "ok" if self.ok else "FAILED"
        return f"{state:6} {self.notebook}  {self.seconds:6.0f} s{'  ' + self.detail if self.detail else ''}"


def _failure_detail(error: BaseException) -> str:
    count = getattr(error, "exec_count", None)
    where = f"at cell [{count}]: " if count is not None else ""
    name = getattr(error, "ename", None) or error.__class__.__name__
    value = getattr(error, "evalue", None) or str(error)
    return f"{where}{name}: {str(value).splitlines()[0][:160] if value else ''}"


def stack(root: Path = ROOT) -> str:
    """'reference' when the installed torch is requirements/reference.txt's pin, else 'current'."""
    import importlib.metadata
    pins = (root / "requirements" / "reference.txt").read_text().splitlines()
    pinned = next((line.split("==")[1].strip() for line in pins if line.startswith("torch==")), None)
    return "reference" if importlib.metadata.version("torch") == pinned else "current"


def book_paths(backend_dir: str, lane: str, book_dir: Path) -> tuple[Path, Path]:
    """(folder for executed notebooks, result-row file) of `backend_dir` on stack `lane`, under `book_dir`.

    The reference stack's runs are the book's pages; the current stack's are kept apart under
    <book_dir>/current/ and <book_dir>/results/current/ so the results page compares stacks, never mixes them.
    """
    if lane == "reference":
        return book_dir / backend_dir, book_dir / "results" / f"{backend_dir}.jsonl"
    return book_dir / lane / backend_dir, book_dir / "results" / lane / f"{backend_dir}.jsonl"


def run_notebook(notebook: Path, out_dir: Path, results_file: Path, device_backend: str, preset: str,
                 root: Path = ROOT, env: dict | None = None) -> Outcome:
    """Execute one chapter with papermill into `out_dir`, appending its rows to `results_file` on success."""
    import papermill

    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"vitlab-run-{notebook.stem}-"))
    partial = staging / notebook.name  # never a half-written notebook inside the book
    saved_env = dict(os.environ)
    os.environ.update(env or {})
    os.environ["VITLAB_RESULTS"] = str(staging / "results")  # the kernel inherits this
    start = time.perf_counter()
    try:
        papermill.execute_notebook(str(notebook), str(partial), parameters={"backend": device_backend,
                                   "preset": preset}, kernel_name="python3", progress_bar=True,
                                   cwd=str(notebook.parent))
    except BaseException as error:  # KeyboardInterrupt too: report, keep the book as it was
        failed = root / "_build" / "failed" / out_dir.parent.name / out_dir.name
        failed.mkdir(parents=True, exist_ok=True)
        if partial.exists():
            shutil.copy(partial, failed / notebook.name)
        detail = _failure_detail(error) + f" (executed copy: {failed / notebook.name})"
        if isinstance(error, KeyboardInterrupt):
            raise
        return Outcome(notebook.stem, False, time.perf_counter() - start, detail)
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
    os.replace(partial, out_dir / notebook.name)
    rows = 0
    results_file.parent.mkdir(parents=True, exist_ok=True)
    for produced in sorted((staging / "results").glob("*.jsonl")):
        for row in load_rows(produced):
            append(row, results_file)  # whole lines only, as the kernel wrote them
            rows += 1
    shutil.rmtree(staging, ignore_errors=True)
    return Outcome(notebook.stem, True, time.perf_counter() - start, f"{rows} result rows")


def run(backend: str, preset: str, names: list[str] | None = None, root: Path = ROOT,
        into: Path | None = None) -> list[Outcome]:
    """Run the selected chapters for `backend`; every notebook runs even when one fails.

    `into` sends the executed notebooks and rows to another folder instead of the book (for tests).
    """
    import torch

    from vitlab.device import backend_name, pick_device
    device = pick_device(backend)
    backend_dir = backend_name(device)
    lane = stack(root)
    out_dir, results_file = book_paths(backend_dir, lane, root / "book" if into is None else into)
    env = {"VITLAB_RUN_ID": uuid.uuid4().hex[:12], "VITLAB_GIT_SHA": git_sha(),
           "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    outcomes = []
    for notebook in select(names, root):
        print(f"--- {notebook.stem} on {backend_dir} ({preset}, {lane} stack) -> {out_dir / notebook.name}",
              flush=True)
        outcome = run_notebook(notebook, out_dir, results_file, torch.device(device).type, preset, root, env)
        print(outcome, flush=True)
        outcomes.append(outcome)
    return outcomes


def chapter_title(notebook: Path) -> str:
    """The notebook's first markdown heading."""
    import nbformat
    for cell in nbformat.read(notebook, as_version=4).cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return notebook.stem


def toc(root: Path = ROOT) -> dict:
    """_toc.yml: intro, each chapter with its executed notebook per backend, the results page."""
    parts = []
    for notebook in chapters(root):
        runs = [(f"book/{b}/{notebook.stem}", b.upper()) for b in BOOK_BACKENDS
                if (root / "book" / b / notebook.name).exists()]
        runs += [(f"book/current/{b}/{notebook.stem}", f"{b.upper()}, current stack") for b in BOOK_BACKENDS
                 if (root / "book" / "current" / b / notebook.name).exists()]
        if not runs:
            continue
        title = chapter_title(notebook)
        (first, where), *others = runs
        entry = {"file": first, "title": f"{title} ({where})"}
        if others:
            entry["sections"] = [{"file": file, "title": f"… on {label}"} for file, label in others]
        parts.append(entry)
    sections = [{"caption": "Chapters", "chapters": parts}] if parts else []
    return {"format": "jb-book", "root": "book/intro",
            "parts": sections + [{"caption": "Results", "chapters": [{"file": "book/results"}]}]}


def build(root: Path = ROOT) -> Path:
    """Write the results page and _toc.yml, then build the HTML book strictly (warnings are errors)."""
    write_results_page(load(root / "book" / "results"), root / "book", load(root / "book" / "results" / "current"))
    (root / "_toc.yml").write_text("# Written by `vitlab book` from the executed notebooks in book/<backend>/.\n"
                                   + yaml.safe_dump(toc(root), sort_keys=False))
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    command = [str(jupyter_book if jupyter_book.exists() else "jupyter-book"), "build", str(root),
               "--warningiserror", "--keep-going"]
    subprocess.run(command, check=True, cwd=root)
    return root / "_build" / "html" / "index.html"
