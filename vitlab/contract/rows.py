"""The row contract, read without torch: a row's status, its comparison group, speedups within a group,
the latest run of each notebook, and what breaks the contract.

Rows compare within a *comparison group*: (backend, notebook, model, batch, group, sweep). Each group
has exactly one row with `baseline: true`; `speedup` is a row's throughput over that row's.
Batch-sweep rows carry `sweep: true`; a variant whose tool is missing is one row with
`skipped: "<why>"` and no timing. Every row carries a `status` field (STATUSES): code reads it,
never the `reason` sentence. Rows are written by the lab's recorder (vitlab.results).
"""
from __future__ import annotations

import re
import uuid

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


# A failed row whose reason reads like a mistake in the calling Python (a name, a call's arguments), not like a
# library saying what it cannot do: a chapter's own bug recorded as a finding (e.g. a global rebound to a bool, then
# passed as **kwargs: "argument after ** must be a mapping, not bool").
OWN_MISTAKES = re.compile(r"^(NameError|UnboundLocalError)\b|argument after \*\*? must be|"
                          r"got an unexpected keyword argument|missing \d+ required (positional|keyword-only) argument|"
                          r"takes \d+ positional arguments? but \d+ (was|were) given|'NoneType' object (is not|has no)")


def row_problems(rows: list[dict]) -> list[str]:
    """What breaks the row contract in the latest run of each notebook among `rows`: a comparison group without
    exactly one baseline row, a skipped or failed row that carries a timing, or a failed row whose reason reads like
    a mistake in our own code (OWN_MISTAKES) rather than a finding."""
    latest = latest_runs(rows)
    timed = [f"{row.get('notebook')}: {status_of(row)} row {row.get('variant')!r} carries a timing" for row in latest
             if status_of(row) in ("skipped", "failed") and any(row.get(k) is not None for k in TIMING_FIELDS)]
    ours = [f"{row.get('notebook')}: failed row {row.get('variant')!r} reads like a bug in the calling code: "
            f"{str(row.get('reason'))[:120]}" for row in latest
            if status_of(row) == "failed" and OWN_MISTAKES.search(str(row.get("reason") or ""))]
    return baseline_problems(latest) + timed + ours
