"""Repeatability: two runs of the same chapters on one machine, each comparison's two verdicts side by side.

    vitlab compare-runs A B          A and B: result-row files (.jsonl) or folders of them (`vitlab run --into`)

A comparison is one row against its group's baseline (vitlab.contract.findings); it is matched across the runs by
backend, notebook, model, variant, batch, group and sweep. Torch-free.
"""
from __future__ import annotations

import datetime as _dt
import statistics
from collections import Counter
from pathlib import Path

from vitlab.contract.findings import Finding, findings, row_id
from vitlab.book.report import agreement
from vitlab.contract.rows import latest_runs
from vitlab.contract.store import load_file


def load_rows(path: Path) -> list[dict]:
    """The latest run of each chapter in a .jsonl file or a folder of them (a missing path: FileNotFoundError)."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    rows = load_file(path) if path.is_file() else [r for f in sorted(path.rglob("*.jsonl")) for r in load_file(f)]
    if not rows:
        raise ValueError(f"{path}: no result rows")
    return latest_runs(rows)


def key(found: Finding) -> tuple:
    return (found.row.get("backend"), found.row.get("notebook"), *row_id(found.row).values())


def pairs(first: list[dict], second: list[dict]) -> list[tuple[Finding, Finding]]:
    """(finding in run A, finding in run B) for every comparison both runs made."""
    theirs = {key(f): f for f in findings(second)}
    return [(f, theirs[key(f)]) for f in findings(first) if key(f) in theirs]


def percentile(values: list[float], q: int) -> float:
    """The q-th percentile with linear interpolation (numpy's default; statistics' inclusive method)."""
    return values[0] if len(values) == 1 else statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def summary(matched: list[tuple[Finding, Finding]], first: list[dict]) -> dict:
    """The tally (same / one undecided / opposite) of timed comparisons and their intervals' half-widths."""
    timed = [(a, b) for a, b in matched if a.ratio is not None and b.ratio is not None]
    tally = Counter(agreement(a.verdict, b.verdict) for a, b in timed)
    widths = [f.band for pair in timed for f in pair if f.band is not None]
    row = first[0] if first else {}
    return {"compared": len(timed), "tally": dict(tally),
            "changed": sum(n for word, n in tally.items() if word != "same"),
            "half_width_median": percentile(widths, 50) if widths else None,
            "half_width_p90": percentile(widths, 90) if widths else None,
            "machine": f"{row.get('device_name')} ({row.get('cpu_isa')}, {row.get('threads')} threads)",
            "stack": f"torch {(row.get('versions') or {}).get('torch')}", "preset": row.get("preset"),
            "date": _dt.date.today().isoformat()}


def lines(matched: list[tuple[Finding, Finding]], said: dict) -> list[str]:
    """One line per comparison (its two verdicts and ratios), then the tally."""
    out = []
    for a, b in matched:
        row = a.row
        ratio = lambda f: "–" if f.ratio is None else f"{f.ratio:.2f}×"
        out.append(f"{row.get('notebook')} | {row.get('model')} | {row.get('variant')} vs "
                   f"{a.baseline.get('variant')} | batch {row.get('batch')} | A: {a.verdict} {ratio(a)} | "
                   f"B: {b.verdict} {ratio(b)} | {agreement(a.verdict, b.verdict)}")
    tally = said["tally"]
    width = lambda v: "–" if v is None else f"±{v:.1%}"
    out.append(f"{said['compared']} timed comparisons in both runs: {tally.get('same', 0)} same, "
               f"{tally.get('one undecided', 0)} one undecided, {tally.get('opposite', 0)} opposite "
               f"({said['changed']} changed); interval half-width {width(said['half_width_median'])} at the median, "
               f"{width(said['half_width_p90'])} at the 90th percentile")
    return out
