"""Writing rows: what one measurement records and the chapter's recorder (the row contract itself, torch-free,
is vitlab.contract.rows; its names are re-exported here for the chapters).

A chapter gets one recorder with its context from `vitlab.chapter.start`, and every row it writes carries that context:

    rec.record("vit-b16-hf", "eager fp32", 1, timing=t, baseline=True)
    rec.record("vit-b16-hf", "compile default", 1, timing=t2, correct=vitlab.results.correctness(out, ref))

torch is imported only when a row is made.
"""
from __future__ import annotations

import datetime as _dt
from functools import lru_cache
from pathlib import Path

from vitlab.contract.rows import (  # noqa: F401  (re-exported)
    STATUSES, TIMING_FIELDS, baseline_problems, comparison_key, latest_runs, new_run_id, row_problems, status_of,
    with_speedups)
from vitlab.contract.store import append, git_sha, load, load_file, results_dir  # noqa: F401  (the store, re-exported)
from vitlab.contract.findings import run_to_run_for


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
             spread: float | None = None, run_id: str | None = None, git_sha: str | None = None,
             backend: str | None = None, **extra) -> dict:
    """One measurement with everything needed to trust and compare it later; `backend`: the book's page name the run
    context gives (None: the device's own, machine.describe's).

    `skipped` (the tool is missing) and `failed` (it ran and did not work) say why in words and carry no timing;
    `status` is set from them and `engaged`.
    """
    import torch
    if (skipped or failed) and timing is not None:
        raise ValueError(f"{variant!r}: a skipped or failed variant carries no timing")
    row = {"notebook": notebook, **_provenance(str(torch.device(device))), **({"backend": backend} if backend else {}),
           "preset": preset,
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
        if getattr(timing, "round_medians_ms", None):  # interleaved: each round's median, the verdicts' evidence
            row["round_medians_ms"] = [round(m, 4) for m in timing.round_medians_ms]
            row["rounds"] = len(timing.round_medians_ms)
            row["timing_session"] = timing.session  # rows of one session ran round k side by side: they pair up
            if timing.budget_s is not None:
                row["budget_s"] = timing.budget_s
            if getattr(timing, "host_busy", None) is not None:  # other programs' CPU use meanwhile, in cores
                row["host_busy"] = timing.host_busy
    if spread is not None:
        row["spread"] = round(float(spread), 4)
    evidence = extra.get("round_medians_ms") or extra.get("round_throughputs")
    if row.get("round_medians_ms") is None and evidence:  # rounds measured elsewhere (a worker process)
        row["rounds"] = len(evidence)
    level = run_to_run_for(notebook, torch.device(device).type)
    if level is not None and (row.get("round_medians_ms") or evidence):  # the verdicts' run-to-run spread
        row["run_to_run"] = level
    # What a comparison of this row is judged on (vitlab.contract.findings reads it): the time one call waits at batch 1
    # in one process, items per second otherwise; a chapter says otherwise with judged_by=...
    row["judged_by"] = extra.pop("judged_by", None) or (
        "latency" if batch == 1 and (extra.get("instances") or 1) == 1 else "throughput")
    if correct:
        row.update(correct)
    row.update(extra)
    if git_sha:
        row["git_sha"] = git_sha
    row.update(run_id=run_id or new_run_id(), time=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    return row


class Recorder:
    """A chapter's row writer: holds (notebook, device, preset, run id, where rows go, the rows' backend: the run
    context's page name, None: the device's own) and this run's rows."""

    def __init__(self, notebook: str, device, preset: str, path: Path | str | None = None,
                 run_id: str | None = None, git_sha: str | None = None, backend: str | None = None):
        self.notebook, self.device, self.preset, self.path = notebook, device, preset, path
        self.run_id, self.git_sha, self.backend = run_id or new_run_id(), git_sha, backend
        self.rows: list[dict] = []

    def record(self, model: str, variant: str, batch: int, timing=None, **fields) -> dict:
        """make_row(...) with this chapter's context, appended as one line; returns the row."""
        row = make_row(self.notebook, self.device, self.preset, model, variant, batch, timing,
                       run_id=self.run_id, git_sha=self.git_sha, backend=self.backend, **fields)
        append(row, self.path)
        self.rows.append(row)
        return row

    def adopt(self, row: dict) -> dict:
        """A row measured by another process of this chapter (a worker with this run id), kept as one of ours."""
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
