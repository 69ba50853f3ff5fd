"""Rows -> sentences: what a run showed, said from its own rows (faster / slower / within noise, engaged or why not).

A chapter prints its conclusions with these, so a page run on another machine or backend says what
*that* run measured. Torch-free.
"""
from __future__ import annotations

from dataclasses import dataclass

from vitlab.results import comparison_key

DEFAULT_BAND = 0.05  # the noise band when a row has no measured spread: ±5%


@dataclass(frozen=True)
class Finding:
    """One variant against its group's baseline."""

    row: dict
    baseline: dict
    ratio: float | None   # throughput / baseline throughput (>1: faster); None when either has no timing
    band: float           # the relative noise band the ratio is judged against

    @property
    def verdict(self) -> str:
        if self.row.get("skipped"):
            return "skipped"
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
        if self.verdict == "skipped":
            return f"{name}: skipped — {row['skipped']}"
        if self.ratio is None:
            return f"{name}: not timed — {row.get('reason') or 'no timing recorded'}"
        if row.get("median_ms") is not None and base.get("median_ms") is not None:
            measured = f"{base['median_ms']:.3g} → {row['median_ms']:.3g} ms"
        else:  # a rate without a per-call latency (e.g. a whole training run)
            measured = f"{base['throughput']:.4g} → {row['throughput']:.4g} items/s"
        text = f"{name}: {self.ratio:.2f}× {base.get('variant')} ({measured} at batch {row.get('batch')}) — {self.verdict}"
        if self.verdict == "within noise":
            text += f" (inside ±{self.band:.0%})"
        if not row.get("engaged", True):
            text += f"; not engaged: {row.get('reason') or 'no reason given'}"
        elif row.get("reason") and self.verdict != "skipped":
            text += f"; {row['reason']}"
        return text


def noise_band(*rows: dict, floor: float = DEFAULT_BAND) -> float:
    """The band two rows' ratio must leave to count as a difference: their largest spread, at least `floor`."""
    return max([floor] + [float(r["spread"]) for r in rows if r.get("spread") is not None])


def compare(row: dict, baseline: dict, floor: float = DEFAULT_BAND) -> Finding:
    """`row` against `baseline` (throughput ratio, judged against the noise band)."""
    ratio = None
    if row.get("throughput") and baseline.get("throughput"):
        ratio = row["throughput"] / baseline["throughput"]
    return Finding(row, baseline, ratio, noise_band(row, baseline, floor=floor))


def findings(rows: list[dict], floor: float = DEFAULT_BAND, **match) -> list[Finding]:
    """Every non-baseline row (matching `match`, e.g. model=..., sweep=False) against its group's baseline."""
    baselines = {comparison_key(r): r for r in rows if r.get("baseline")}
    picked = [r for r in rows if all(r.get(k) == v for k, v in match.items())]
    return [compare(r, baselines[comparison_key(r)], floor) for r in picked
            if not r.get("baseline") and comparison_key(r) in baselines]


def best(rows: list[dict], floor: float = DEFAULT_BAND, **match) -> str:
    """One sentence: the fastest timed row matching `match`, and whether it beats the runner-up beyond noise."""
    timed = sorted((r for r in rows if r.get("throughput") and all(r.get(k) == v for k, v in match.items())),
                   key=lambda r: r["throughput"], reverse=True)
    if not timed:
        return "nothing was timed"
    if len(timed) == 1:
        return f"only {timed[0]['variant']} was timed"
    first, second = timed[:2]
    lead = compare(first, second, floor)
    if lead.verdict == "within noise":
        return (f"fastest: {first['variant']} and {second['variant']} are within noise of each other "
                f"({lead.ratio:.2f}×, band ±{lead.band:.0%})")
    return f"fastest: {first['variant']}, {lead.ratio:.2f}× the runner-up {second['variant']} (beyond the ±{lead.band:.0%} band)"


def say(rows: list[dict], floor: float = DEFAULT_BAND, **match) -> None:
    """Print findings(rows, **match), one line each."""
    for finding in findings(rows, floor, **match):
        print(finding)
