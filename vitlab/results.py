"""Result rows with provenance: one JSON object per measurement, appended as a whole line."""
from __future__ import annotations

import datetime as _dt
import json
import os
import subprocess
import uuid
from functools import lru_cache
from pathlib import Path

import torch

from vitlab.data import cache_dir
from vitlab.device import describe
from vitlab.timing import Timing

RUN_ID = os.environ.get("VITLAB_RUN_ID") or uuid.uuid4().hex[:12]


def results_dir() -> Path:
    """Where rows go: $VITLAB_RESULTS (`vitlab run` points it at book/results), else a scratch folder."""
    return Path(os.environ.get("VITLAB_RESULTS", cache_dir() / "results"))


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


@lru_cache(maxsize=None)
def _provenance(device: str) -> dict:
    info = describe(device)
    return {"backend": info["backend"], "device_name": info["device_name"], "cpu_isa": info["cpu_isa"],
            "threads": info["threads"], "versions": info["versions"], "git_sha": git_sha()}


def correctness(output: torch.Tensor, reference: torch.Tensor) -> dict:
    """How far `output` logits are from the eager fp32 `reference`: max-abs diff, top-1 agreement."""
    output, reference = output.detach().float().cpu(), reference.detach().float().cpu()
    return {"max_abs_diff": float((output - reference).abs().max()),
            "top1_agreement": float((output.argmax(-1) == reference.argmax(-1)).float().mean())}


def make_row(notebook: str, device, preset: str, model: str, variant: str, batch: int,
             timing: Timing | None = None, compile_s: float | None = None,
             correct: dict | None = None, engaged: bool = True, reason: str = "", **extra) -> dict:
    """One measurement with everything needed to trust and compare it later."""
    row = {"notebook": notebook, **_provenance(str(torch.device(device))), "preset": preset,
           "model": model, "variant": variant, "batch": batch,
           "median_ms": None, "p90_ms": None, "throughput": None, "compile_s": compile_s,
           "max_abs_diff": None, "top1_agreement": None, "engaged": bool(engaged), "reason": reason}
    if timing is not None:
        row.update(median_ms=round(timing.median_ms, 4), p90_ms=round(timing.p90_ms, 4),
                   throughput=round(timing.throughput(batch), 3), iters=len(timing.samples_ms))
        if compile_s is None and timing.first_call_s is not None:
            row["compile_s"] = round(timing.first_call_s, 3)
    if correct:
        row.update(correct)
    row.update(extra)
    row.update(run_id=RUN_ID, time=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    return row


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


def record(*args, path: Path | str | None = None, **kwargs) -> dict:
    """make_row(...) and append it; returns the row."""
    row = make_row(*args, **kwargs)
    append(row, path)
    return row


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


def frame(rows: list[dict]):
    """Rows as a pandas DataFrame with the columns a reader compares first."""
    import pandas as pd
    df = pd.DataFrame(rows)
    first = [c for c in ("notebook", "backend", "model", "variant", "batch", "median_ms", "p90_ms",
                         "throughput", "compile_s", "max_abs_diff", "top1_agreement", "engaged", "reason")
             if c in df.columns]
    return df[first + [c for c in df.columns if c not in first]]
