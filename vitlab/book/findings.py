"""Rows -> sentences: what a run showed, said from its own rows (faster / slower / within noise, engaged or why not).

A chapter prints its conclusions with these, so a page run on another machine or backend says what
*that* run measured. Torch-free.
"""
from __future__ import annotations

from dataclasses import dataclass

import json

from vitlab.book.rows import comparison_key, status_of
from vitlab.book.text import markdown_table

DEFAULT_BAND = 0.05  # the noise band when a row has no measured spread: ±5%


@dataclass(frozen=True)
class Finding:
    """One variant against its group's baseline."""

    row: dict
    baseline: dict
    ratio: float | None   # throughput / baseline throughput (>1: faster); None when either has no timing
    band: float           # the relative noise band the ratio is judged against
    latency: bool = False  # ratio = baseline median_ms / median_ms (per-request speed), not throughput

    @property
    def verdict(self) -> str:
        status = status_of(self.row)
        if status in ("skipped", "failed"):
            return status
        if self.ratio is None:
            return "not timed"
        if self.ratio > 1 + self.band:
            return "faster"
        if self.ratio < 1 / (1 + self.band):
            return "slower"
        return "within noise"

    def __str__(self) -> str:
        row, base = self.row, self.baseline
        name = row.get("variant")
        if self.verdict in ("skipped", "failed"):
            return f"{name}: {self.verdict} — {row.get('reason') or 'no reason given'}"
        if self.ratio is None:
            return f"{name}: not timed — {row.get('reason') or 'no timing recorded'}"
        if self.latency:
            measured = f"latency {base['median_ms']:.3g} → {row['median_ms']:.3g} ms"
        elif _per_call(row) and _per_call(base):
            measured = f"{base['median_ms']:.3g} → {row['median_ms']:.3g} ms"
        else:  # a rate without one per-call latency (a whole training run, several instances' sum)
            measured = f"{_rate(base['throughput'])} → {_rate(row['throughput'])} items/s"
        text = f"{name}: {self.ratio:.2f}× {base.get('variant')} ({measured} at batch {row.get('batch')}) — {self.verdict}"
        if self.verdict == "within noise":
            text += f" (inside ±{self.band:.0%})"
        if not row.get("engaged", True):
            text += f"; not engaged: {row.get('reason') or 'no reason given'}"
        elif row.get("reason") and self.verdict != "skipped":
            text += f"; {row['reason']}"
        return text


def _rate(items_per_s: float) -> str:
    """A rate as people read it: 8,383 or 34,990 (not 3.499e+04); three digits below 100."""
    return f"{items_per_s:,.0f}" if items_per_s >= 100 else f"{items_per_s:.3g}"


def _per_call(row: dict) -> bool:
    """Whether the row's throughput is its batch over its median call (one process): then ms say the same."""
    return row.get("median_ms") is not None and (row.get("instances") or 1) == 1


def noise_band(*rows: dict, floor: float = DEFAULT_BAND) -> float:
    """The band two rows' ratio must leave to count as a difference: their largest spread, at least `floor`."""
    return max([floor] + [float(r["spread"]) for r in rows if r.get("spread") is not None])


def compare(row: dict, baseline: dict, floor: float = DEFAULT_BAND, latency: bool = False) -> Finding:
    """`row` against `baseline`: the throughput ratio (or, with `latency`, the inverse ratio of the median
    per-call times: what one request waits), judged against the noise band."""
    ratio = None
    key = "median_ms" if latency else "throughput"
    if row.get(key) and baseline.get(key):
        ratio = baseline[key] / row[key] if latency else row[key] / baseline[key]
    return Finding(row, baseline, ratio, noise_band(row, baseline, floor=floor), latency)


def findings(rows: list[dict], floor: float = DEFAULT_BAND, **match) -> list[Finding]:
    """Every non-baseline row (matching `match`, e.g. model=..., sweep=False) against its group's baseline."""
    baselines = {comparison_key(r): r for r in rows if r.get("baseline")}
    picked = [r for r in rows if all(r.get(k) == v for k, v in match.items())]
    return [compare(r, baselines[comparison_key(r)], floor) for r in picked
            if not r.get("baseline") and comparison_key(r) in baselines]


def best(rows: list[dict], floor: float = DEFAULT_BAND, latency: bool = False, **match) -> str:
    """One sentence: the fastest timed row matching `match` (by throughput, or with `latency` by median
    per-call time), and whether it beats the runner-up beyond noise."""
    key = "median_ms" if latency else "throughput"
    timed = sorted((r for r in rows if r.get(key) and all(r.get(k) == v for k, v in match.items())),
                   key=lambda r: r[key], reverse=not latency)
    if not timed:
        return "nothing was timed"
    if len(timed) == 1:
        return f"only {timed[0]['variant']} was timed"
    return lead(timed[0], timed[1], floor, latency)


def lead(first: dict, second: dict, floor: float = DEFAULT_BAND, latency: bool = False) -> str:
    """best()'s sentence for `first` ahead of the runner-up `second`."""
    found = compare(first, second, floor, latency)
    by = " by latency" if latency else ""
    if found.verdict == "within noise":
        return (f"fastest{by}: {first['variant']} and {second['variant']} are within noise of each other "
                f"({found.ratio:.2f}×, band ±{found.band:.0%})")
    return (f"fastest{by}: {first['variant']}, {found.ratio:.2f}× the runner-up {second['variant']} "
            f"(beyond the ±{found.band:.0%} band)")


def say(rows: list[dict], floor: float = DEFAULT_BAND, **match) -> None:
    """Print findings(rows, **match), one line each."""
    for finding in findings(rows, floor, **match):
        print(finding)


def above_ceiling(rows: list[dict]) -> list[str]:
    """One sentence per timed row whose achieved FLOP/s is above its measured ceiling: the device ran that row
    faster than any GEMM call of the ceiling, so the ceiling was measured in a slower spell (its round spread says
    how much the row itself moved)."""
    return [f"{r['variant']} at batch {r['batch']}: {100 * r['ceiling_fraction']:.0f}% of the measured ceiling "
            f"({r['ceiling_basis']}): the machine ran this row faster than any GEMM call of the ceiling; "
            f"its round spread is {r.get('spread') or 0:.0%}"
            for r in rows if not r.get("skipped") and (r.get("ceiling_fraction") or 0) > 1]


ROW_KEYS = ("model", "variant", "batch", "group", "sweep")


def row_id(row: dict) -> dict:
    """The fields that pick one row out of a chapter run's rows."""
    return {key: row.get(key) for key in ROW_KEYS}


def glue_values(key: str, finding: Finding) -> dict:
    """What a chapter glues for one finding: `key_ratio` ('1.23'), `key_verdict` (faster | slower | within noise |
    skipped | failed | not timed), `key_band` ('5%'), `key_status` (the row's status), and `key_rows`: which rows
    and how (JSON), so a test recomputes the finding from the committed rows."""
    return {f"{key}_ratio": "–" if finding.ratio is None else f"{finding.ratio:.2f}",
            f"{key}_verdict": finding.verdict,
            f"{key}_band": f"{finding.band:.0%}",
            f"{key}_status": status_of(finding.row),
            f"{key}_rows": json.dumps({"row": row_id(finding.row), "baseline": row_id(finding.baseline),
                                        "latency": finding.latency})}


def table(found: list[Finding]):
    """Findings as one compact Markdown table (variant, against, batch, ratio, verdict, band, note)."""
    rows = [{"variant": f.row.get("variant"), "against": f.baseline.get("variant"), "batch": f.row.get("batch"),
             "ratio": f.ratio, "verdict": f.verdict, "band": f.band, "status": status_of(f.row),
             "note": f.row.get("reason") or ""} for f in found]
    return markdown_table(rows, {"ratio": lambda r: f"{r:.2f}×", "band": lambda b: f"±{b:.0%}"}, limit=70)
