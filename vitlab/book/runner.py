"""The book pipeline: papermill runs the chapters per backend, Jupyter Book renders them."""
from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from vitlab.contract import chapters as chapter_table, layout
from vitlab.contract.context import RunContext
from vitlab.contract.gpus import short_name
from vitlab.contract.paths import hub_offline_reason
from vitlab.book.report import write_results_page
from vitlab.contract.store import append, git_sha, load, load_file as load_rows
from vitlab.contract.text import headline

ROOT = layout.ROOT


def chapters(root: Path = ROOT) -> list[Path]:
    """The chapter notebooks, in order (notebooks/NN_*.ipynb)."""
    return chapter_table.notebooks(root / "notebooks")


def select(names: list[str] | None, root: Path = ROOT) -> list[Path]:
    """Chapters matching `names` (chapters.matches: a stem, its number or the part after it); KeyError names the
    choices."""
    every = chapters(root)
    if not names:
        return every
    picked = []
    for name in names:
        match = [p for p in every if chapter_table.matches(name, p.stem)]
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
    rows: int = 0

    def __str__(self) -> str:
        state = "ok" if self.ok else "FAILED"
        return f"{state:6} {self.notebook}  {self.seconds:6.0f} s{'  ' + self.detail if self.detail else ''}"


def _failure_detail(error: BaseException) -> str:
    count = getattr(error, "exec_count", None)
    where = f"at cell [{count}]: " if count is not None else ""
    name = getattr(error, "ename", None) or error.__class__.__name__
    value = getattr(error, "evalue", None) or str(error)
    return where + headline(name, value)


def stack_of(torch_version: str) -> str:
    """The one stack rule: 'reference' when `torch_version`'s release (local tag such as +cpu dropped) is the
    reference stack's torch (layout.REFERENCE_TORCH, requirements/reference.txt's pin), else 'current'."""
    return "reference" if torch_version.split("+")[0] == layout.REFERENCE_TORCH else "current"


def stack() -> str:
    """The installed torch's stack (stack_of)."""
    import importlib.metadata
    return stack_of(importlib.metadata.version("torch"))


def hide_injected_parameters(notebook: Path) -> None:
    """The page shows the story, not the plumbing: papermill's injected-parameters cell is tagged `remove-cell`,
    and an output that printed only whitespace (a library's bare newline written from C) is dropped, so the page
    has no empty output box."""
    import nbformat
    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.setdefault("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs
                            if not (o.output_type == "stream" and o.name == "stdout" and not o.text.strip())]
    nbformat.write(nb, notebook)


def writable_folder(path: Path) -> Path:
    """`path`, created if needed; ValueError with one line when it cannot be created or written."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".vitlab-write-check-{uuid.uuid4().hex[:8]}"
        probe.touch()
        probe.unlink()
    except OSError as error:
        raise ValueError(f"cannot write into {str(path)!r}: {error.strerror or error}") from None
    return path


def run_notebook(notebook: Path, out_dir: Path, results_file: Path, context: RunContext,
                 root: Path = ROOT) -> Outcome:
    """Execute one chapter with papermill into `out_dir`, appending its rows to `results_file` on success.

    The chapter gets everything about the run as its one parameter, `context` (a RunContext's dict: device type,
    page name, preset, stack, run id, git sha, hub offline, and where its rows go); its start call opens the recorder
    there. Rows a chapter records on another device (the host CPU during a GPU run) go to `context.host_rows`, which
    is not kept. Nothing in this process's environment changes.
    """
    import papermill

    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"vitlab-run-{notebook.stem}-"))
    partial = staging / notebook.name  # never a half-written notebook inside the book
    context = replace(context, rows=str(staging / "rows.jsonl"), host_rows=str(staging / "host-rows.jsonl"))
    start = time.perf_counter()
    try:
        papermill.execute_notebook(str(notebook), str(partial), kernel_name="python3", progress_bar=True,
                                   parameters={"context": context.to_dict()}, cwd=str(notebook.parent))
    except BaseException as error:  # KeyboardInterrupt too: report, keep the book as it was
        failed = root / "_build" / "failed" / out_dir.parent.name / out_dir.name
        failed.mkdir(parents=True, exist_ok=True)
        if partial.exists():
            shutil.copy(partial, failed / notebook.name)
        shutil.rmtree(staging, ignore_errors=True)  # the failed run's rows are not kept
        detail = _failure_detail(error) + f" (executed copy: {failed / notebook.name})"
        if isinstance(error, KeyboardInterrupt):
            raise
        return Outcome(notebook.stem, False, time.perf_counter() - start, detail)
    hide_injected_parameters(partial)
    os.replace(partial, out_dir / notebook.name)
    produced = load_rows(staging / "rows.jsonl") if (staging / "rows.jsonl").exists() else []
    host = len(load_rows(staging / "host-rows.jsonl")) if (staging / "host-rows.jsonl").exists() else 0
    results_file.parent.mkdir(parents=True, exist_ok=True)
    for row in produced:
        append(row, results_file)  # whole lines only, as the kernel wrote them
    shutil.rmtree(staging, ignore_errors=True)
    detail = f"{len(produced)} result rows" + (f" ({host} host-CPU rows of a {context.backend} run not kept)"
                                                if host else "")
    return Outcome(notebook.stem, True, time.perf_counter() - start, detail, rows=len(produced))


def run(device_type: str, backend: str, preset: str, notebooks: list[Path], stack_name: str,
        book_dir: Path, root: Path = ROOT) -> list[Outcome]:
    """Run `notebooks` on `device_type` (pages named `backend`, e.g. rocm on cuda) into `book_dir`.

    The arguments are resolved by the caller (`vitlab run`); every notebook runs even when one fails.
    """
    out_dir = layout.pages_dir(backend, stack_name, book_dir)
    results_file = layout.rows_file(backend, stack_name, book_dir)
    offline = hub_offline_reason()
    if offline:  # probe the hub once here, so no kernel waits ~30 s on retries
        print(f"model hub: {offline}; the chapters run offline (HF_HUB_OFFLINE=1 in their kernels)", flush=True)
    context = RunContext(device_type, backend, preset, stack_name, uuid.uuid4().hex[:12], git_sha(), bool(offline))
    outcomes = []
    for notebook in notebooks:
        print(f"--- {notebook.stem} on {backend} ({preset}, {stack_name} stack) -> {out_dir / notebook.name}",
              flush=True)
        outcome = run_notebook(notebook, out_dir, results_file, context, root)
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


def _device(backend: str, stack_name: str, root: Path) -> str:
    """' (H200)': a GPU backend's device, when its rows name exactly one; '' for the CPU or when unknown."""
    path = layout.rows_file(backend, stack_name, root / "book")
    names = {r.get("device_name") for r in load_rows(path)} - {None} if backend != "cpu" and path.exists() else set()
    return f" ({short_name(names.pop())})" if len(names) == 1 else ""


def run_label(backend: str, stack_name: str, root: Path = ROOT) -> str:
    """How a page's title names its run: 'CPU, reference stack', 'CUDA (H200), current stack'. The chapter's pages
    share its heading; this is what tells them apart, in the table of contents and (book/_ext/page_titles.py) in
    each page's own title, which the previous/next links show."""
    return f"{backend.upper()}{_device(backend, stack_name, root)}, {stack_name} stack"


def page_run(pagename: str) -> tuple[str, str, str] | None:
    """(backend, stack, chapter) of an executed chapter's page name ('book/current/cpu/02_torch_compile'), else None."""
    parts = pagename.split("/")
    if len(parts) < 3 or parts[0] != "book" or not fnmatch.fnmatch(f"{parts[-1]}.ipynb", chapter_table.PATTERN):
        return None
    for stack_name in layout.STACKS:
        for backend in layout.BACKENDS:
            if layout.page(backend, stack_name, parts[-1]) == pagename:
                return backend, stack_name, parts[-1]
    return None


def toc(root: Path = ROOT) -> dict:
    """_toc.yml: intro, each chapter with its executed notebook per backend, the results page."""
    parts = []
    labels = {(b, stack_name): run_label(b, stack_name, root)
              for stack_name in layout.STACKS for b in layout.BACKENDS}  # each rows file read once
    for notebook in chapters(root):
        runs = [(layout.page(b, stack_name, notebook.stem), labels[b, stack_name])
                for stack_name in layout.STACKS for b in layout.BACKENDS
                if (layout.pages_dir(b, stack_name, root / "book") / notebook.name).exists()]
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
    book_dir = root / "book"
    write_results_page(load(layout.rows_dir("reference", book_dir)), book_dir, load(layout.rows_dir("current", book_dir)))
    (root / "_toc.yml").write_text("# Written by `vitlab book` from the executed notebooks in book/<backend>/.\n"
                                   + yaml.safe_dump(toc(root), sort_keys=False))
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    command = [str(jupyter_book if jupyter_book.exists() else "jupyter-book"), "build", str(root),
               "--warningiserror", "--keep-going"]
    subprocess.run(command, check=True, cwd=root)
    return root / "_build" / "html" / "index.html"
