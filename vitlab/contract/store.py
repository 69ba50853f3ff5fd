"""The row store: JSON lines appended whole, read back skipping torn lines. Torch-free."""
from __future__ import annotations

import json
import os
import subprocess
from functools import lru_cache
from pathlib import Path

from vitlab.contract.paths import cache_dir


def results_dir() -> Path:
    """Where rows go when the run context names no file (a run by hand): the scratch folder in vitlab's cache."""
    return cache_dir() / "results"


@lru_cache(maxsize=None)
def git_sha() -> str:
    """The commit of the vitlab checkout (or $VITLAB_GIT_SHA), 'unknown' outside a repository."""
    if os.environ.get("VITLAB_GIT_SHA"):
        return os.environ["VITLAB_GIT_SHA"]
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=Path(__file__).parent,
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def append(row: dict, path: Path | str | None = None) -> Path:
    """Append `row` as one complete JSON line to `path` (default: results_dir()/<backend>.jsonl)."""
    path = Path(path) if path else results_dir() / f"{row['backend']}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(row, default=str) + "\n"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        # A crash mid-write elsewhere may have left a line without its newline: start a fresh one.
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = "\n" + line
        os.write(fd, line.encode())  # one write of the whole line: no half rows from us
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def load_file(path: Path | str) -> list[dict]:
    """The complete rows of one .jsonl file; a torn line (a writer killed mid-line) is skipped."""
    rows = []
    for line in Path(path).read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def load(directory: Path | str | None = None) -> list[dict]:
    """All complete rows of every backend's .jsonl file in `directory`."""
    directory = Path(directory) if directory else results_dir()
    return [row for path in sorted(directory.glob("*.jsonl")) for row in load_file(path)]
