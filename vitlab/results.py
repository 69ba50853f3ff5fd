"""The row schema: what one measurement records, the chapter's recorder, and what rows mean together.

A chapter opens one recorder with its context and every row it writes carries that context:

    rec = vitlab.results.recorder(NOTEBOOK, device, preset)
    rec.record("vit-b16-hf", "eager fp32", 1, timing=t, baseline=True)
    rec.record("vit-b16-hf", "compile default", 1, timing=t2, correct=vitlab.results.correctness(out, ref))

Rows compare within a *comparison group*: (backend, notebook, model, batch, group, sweep). Each group
has exactly one row with `baseline: true`; `speedup` is a row's throughput over that row's.
Batch-sweep rows carry `sweep: true`; a variant whose tool is missing is one row with
`skipped: "<why>"` and no timing. Every row carries a `status` field (STATUSES): code reads it,
never the `reason` sentence. torch is imported only when a row is made.
"""
from __future__ import annotations

import datetime as _dt
import uuid
from functools import lru_cache
from pathlib import Path

from vitlab.store import append, git_sha, load, load_file, results_dir  # noqa: F401  (the store, re-exported)

TIMING_FIELDS = ("median_ms", "p90_ms", "throughput", "iters", "compile_s", "spread")
STATUSES = ("ok", "not engaged", "failed", "skipped")  # a row's `status`: what code reads instead of sentences


def new_run_id() -> str:
    """A fresh run id (a chapter run outside `vitlab run` makes its own when it starts)."""
    return uuid.uuid4().hex[:12]


def status_of(row: dict) -> str:
    """A row's status; rows written before the field existed get it from their fields."""
    if row.get("status"):
        return row["status"]
    if row.get("skipped"):
        return "skipped"
    if row.get("failed"):
        return "failed"
    return "ok" if row.get("engaged", True) else "not engaged"


@lru_cache(maxsize=None)
def _provenance(device: str) -> dict:
    from vitlab.machine import describe
    info = describe(device)
    return {"backend": info["backend"], "device_name": info["device_name"], "cpu_isa": info["cpu_isa"],
            "threads": info["threads"], "versions": info["versions"], "git_sha": git_sha()}


def correctness(output, reference) -> dict:
    """How far `output` logits are from the eager fp32 `reference`: max-abs diff, top-1 agreement."""
    output, reference = output.detach().float().cpu(), reference.detach().float().cpu()
    return {"max_abs_diff": float((output - reference).abs().max()),
            "top1_agreement": float((output.argmax(-1) == reference.argmax(-1)).float().mean())}


def make_row(notebook: str, device, preset: str, model: str, variant: str, batch: int,
             timing=None, compile_s: float | None = None, correct: dict | None = None,
             engaged: bool = True, reason: str = "", *, baseline: bool = False, sweep: bool = False,
             group: str | None = None, skipped: str | None = None, failed: str | None = None,
             spread: float | None = None, run_id: str | None = None, git_sha: str | None = None, **extra) -> dict:
    """One measurement with everything needed to trust and compare it later.

    `skipped` (the tool is missing) and `failed` (it ran and did not work) say why in words and carry no timing;
    `status` is set from them and `engaged`.
    """
    import torch
    if (skipped or failed) and timing is not None:
        raise ValueError(f"{variant!r}: a skipped or failed variant carries no timing")
    row = {"notebook": notebook, **_provenance(str(torch.device(device))), "preset": preset,
           "model": model, "variant": variant, "batch": batch, "group": group,
           "baseline": bool(baseline), "sweep": bool(sweep),
           "median_ms": None, "p90_ms": None, "throughput": None, "compile_s": compile_s, "spread": None,
           "max_abs_diff": None, "top1_agreement": None, "engaged": bool(engaged) and not (skipped or failed),
           "reason": skipped or failed or reason,
           "status": "skipped" if skipped else "failed" if failed else "ok" if engaged else "not engaged"}
    if skipped:
        row["skipped"] = skipped
    if failed:
        row["failed"] = failed
    if timing is not None:
        row.update(median_ms=round(timing.median_ms, 4), p90_ms=round(timing.p90_ms, 4),
                   throughput=round(timing.throughput(batch), 3), iters=len(timing.samples_ms))
        if timing.first_call_s is not None:  # a first call, compiled or not: `compile_s` only when the caller says so
            row["first_call_s"] = round(timing.first_call_s, 3)
        spread = spread if spread is not None else getattr(timing, "spread", None)
        if getattr(timing, "round_medians_ms", None):  # interleaved: each round's median, to see what the spread is made of
            row["round_medians_ms"] = [round(m, 4) for m in timing.round_medians_ms]
    if spread is not None:
        row["spread"] = round(float(spread), 4)
    if correct:
        row.update(correct)
    row.update(extra)
    if git_sha:
        row["git_sha"] = git_sha
    row.update(run_id=run_id or new_run_id(), time=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    return row


class Recorder:
    """A chapter's row writer: holds (notebook, device, preset, run id, where rows go) and this run's rows."""

    def __init__(self, notebook: str, device, preset: str, path: Path | str | None = None,
                 run_id: str | None = None, git_sha: str | None = None):
        self.notebook, self.device, self.preset, self.path = notebook, device, preset, path
        self.run_id, self.git_sha = run_id or new_run_id(), git_sha
        self.rows: list[dict] = []

    def record(self, model: str, variant: str, batch: int, timing=None, **fields) -> dict:
        """make_row(...) with this chapter's context, appended as one line; returns the row."""
        row = make_row(self.notebook, self.device, self.preset, model, variant, batch, timing,
                       run_id=self.run_id, git_sha=self.git_sha, **fields)
        append(row, self.path)
        self.rows.append(row)
        return row

    def speedups(self, **match) -> list[dict]:
        """This run's rows whose fields equal `match` (e.g. model=..., sweep=False), each with its `speedup`."""
        return [r for r in with_speedups(self.rows) if all(r.get(k) == v for k, v in match.items())]


def recorder(notebook: str, device, preset: str, path: Path | str | None = None, run_id: str | None = None,
             git_sha: str | None = None) -> Recorder:
    """Open a recorder (rows go to `path`, else results_dir()/<backend>.jsonl); chapters get theirs from start()."""
    return Recorder(notebook, device, preset, path, run_id, git_sha)


def comparison_key(row: dict) -> tuple:
    """The comparison group a row belongs to: rows compare only within one."""
    return (row.get("backend"), row.get("notebook"), row.get("model"), row.get("batch"),
            row.get("group"), bool(row.get("sweep")))


def with_speedups(rows: list[dict]) -> list[dict]:
    """Each row plus `speedup`: its throughput over its comparison group's baseline row's (None without one)."""
    baselines = {comparison_key(r): r for r in rows if r.get("baseline")}
    out = []
    for row in rows:
        base = baselines.get(comparison_key(row))
        speedup = None
        if base and base.get("throughput") and row.get("throughput"):
            speedup = row["throughput"] / base["throughput"]
        out.append({**row, "speedup": speedup})
    return out


def baseline_problems(rows: list[dict]) -> list[str]:
    """Comparison groups without exactly one baseline row (groups of untimed rows only, skipped or failed, are
    exempt: nothing in them is compared)."""
    counts: dict[tuple, int] = {}
    for row in rows:
        if status_of(row) not in ("skipped", "failed"):
            counts.setdefault(comparison_key(row), 0)
            counts[comparison_key(row)] += bool(row.get("baseline"))
    return [f"{key}: {n} baseline rows" for key, n in counts.items() if n != 1]


def latest_runs(rows: list[dict]) -> list[dict]:
    """Only the rows of the most recent run of each (backend, notebook)."""
    newest: dict[tuple, tuple] = {}
    for row in rows:
        key = (row.get("backend"), row.get("notebook"))
        stamp = (row.get("time", ""), row.get("run_id"))
        if key not in newest or stamp[0] > newest[key][0]:
            newest[key] = stamp
    return [r for r in rows if newest[(r.get("backend"), r.get("notebook"))][1] == r.get("run_id")]


def row_problems(rows: list[dict]) -> list[str]:
    """What breaks the row contract in the latest run of each notebook among `rows`: a comparison group without
    exactly one baseline row, or a skipped or failed row that carries a timing."""
    latest = latest_runs(rows)
    timed = [f"{row.get('notebook')}: {status_of(row)} row {row.get('variant')!r} carries a timing" for row in latest
             if status_of(row) in ("skipped", "failed") and any(row.get(k) is not None for k in TIMING_FIELDS)]
    return baseline_problems(latest) + timed
