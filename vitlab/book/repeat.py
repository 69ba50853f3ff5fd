"""Repeatability: two runs of the same chapters on one machine, each comparison's two verdicts side by side.

    vitlab compare-runs A B          A and B: result-row files (.jsonl) or folders of them (`vitlab run --into`)
    vitlab compare-runs --rounds-only A B    the same rows judged on their rounds alone (no `run_to_run`): the
                                             calibration that RUN_TO_RUN (vitlab.contract.findings) keeps

A comparison is one row against its group's baseline (vitlab.contract.findings); it is matched across the runs by
backend, notebook, model, variant, batch, group and sweep. Torch-free.
"""
from __future__ import annotations

import datetime as _dt
import math
import statistics
from collections import Counter
from pathlib import Path

from vitlab.contract.findings import DRIFTED, Finding, findings, row_id, t_quantile
from vitlab.book.report import agreement, controls_said
from vitlab.contract.rows import latest_runs
from vitlab.contract.store import load_file


def load_rows(path: Path, rounds_only: bool = False) -> list[dict]:
    """The latest run of each chapter in a .jsonl file or a folder of them (a missing path: FileNotFoundError).

    `rounds_only`: the rows as if they carried no run-to-run spread (their `run_to_run` dropped), so that their
    intervals hold their rounds alone: what calibrating RUN_TO_RUN (vitlab.contract.findings) judges them on."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    rows = load_file(path) if path.is_file() else [r for f in sorted(path.rglob("*.jsonl")) for r in load_file(f)]
    if not rows:
        raise ValueError(f"{path}: no result rows")
    if rounds_only:
        rows = [{k: v for k, v in r.items() if k != "run_to_run"} for r in rows]
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


def standard_error(found: Finding) -> float:
    """The standard error of a finding's log ratio: its 95% half-width in logs over the t quantile it used
    (paired: rounds - 1 degrees of freedom; unpaired: the normal's, which makes the error no smaller)."""
    i = found.interval
    df = i.rounds - 1 if i.paired else float("inf")
    return (math.log(i.high) - math.log(i.low)) / 2 / t_quantile(max(df, 1))


def moved(a: Finding, b: Finding) -> float:
    """How far one comparison's two ratios lie apart in standard errors of their difference: about 1 comparison
    in 20 lies beyond 1.96 when each run's interval holds all that varies from one run to the next."""
    return _over(abs(math.log(a.ratio / b.ratio)), math.hypot(standard_error(a), standard_error(b)))


def _over(part: float, whole: float) -> float:
    """part / whole, where an interval of zero width (rounds that repeat exactly) holds only its own value."""
    return part / whole if whole > 0 else (math.inf if part > 0 else 0.0)


def run_to_run(pairs: list[tuple[Finding, Finding]]) -> float:
    """What varies from one run to the next beyond both runs' intervals, as a 95% half-width (0.04: ±4%). With a
    run-level offset of standard deviation s in each run, a comparison's two log ratios differ by d with variance
    se_a² + se_b² + 2s²; s is the smallest offset for which the mean of d² / (se_a² + se_b² + 2s²) is 1 (the
    differences then look as large as the widened intervals say, on average), 0 when they do without one."""
    terms = [(math.log(a.ratio / b.ratio) ** 2, standard_error(a) ** 2 + standard_error(b) ** 2) for a, b in pairs]
    excess = lambda s: sum(_over(d2, v + 2 * s * s) for d2, v in terms) / len(terms) - 1 if terms else -1.0
    if excess(0.0) <= 0:
        return 0.0
    low, high = 0.0, 1.0
    for _ in range(60):  # bisection: excess falls as s grows
        low, high = ((low + high) / 2, high) if excess((low + high) / 2) > 0 else (low, (low + high) / 2)
    return math.expm1(1.96 * high)


def calibration(timed: list[tuple[Finding, Finding]]) -> dict[str, dict]:
    """Per chapter (and "all"): comparisons with an interval in both runs, how many of them lie further apart
    than their intervals allow (`beyond`: expect about 1 in 20), and the run-to-run spread beyond the intervals."""
    both = [(a, b) for a, b in timed if a.interval is not None and b.interval is not None]
    chapters: dict[str, list] = {}
    for a, b in both:
        chapters.setdefault(a.row.get("notebook"), []).append((a, b))
    out = {}
    for name, these in [*sorted(chapters.items()), ("all", both)]:
        out[name] = {"compared": len(these), "beyond": sum(moved(a, b) > 1.96 for a, b in these),
                     "run_to_run": run_to_run(these)}
    return out


def summary(matched: list[tuple[Finding, Finding]], first: list[dict]) -> dict:
    """The tally (same / one undecided / opposite) of timed comparisons and their intervals' half-widths."""
    both = [(a, b) for a, b in matched if a.ratio is not None and b.ratio is not None]
    # a control (the baseline re-timed against itself) judges the machine, not an optimisation: tallied apart
    checks = [(a, b) for a, b in both if a.is_drift()]
    timed = [(a, b) for a, b in both if not a.is_drift()]
    tally = Counter(agreement(a.verdict, b.verdict) for a, b in timed)
    widths = [f.band for pair in timed for f in pair if f.band is not None]
    row = first[0] if first else {}
    undecided = {"within noise", "inconclusive"}
    return {"compared": len(timed), "tally": dict(tally),
            "changed": sum(n for word, n in tally.items() if word != "same"),
            # of the "one undecided": the two verdicts differ, but neither is a call (within noise vs inconclusive)
            "neither_a_call": sum(a.verdict != b.verdict and {a.verdict, b.verdict} <= undecided for a, b in timed),
            "half_width_median": percentile(widths, 50) if widths else None,
            "half_width_p90": percentile(widths, 90) if widths else None,
            "calibration": calibration(both),
            "controls": {"compared": len(checks), "same": sum(a.verdict == b.verdict for a, b in checks),
                         "drifted": sum(DRIFTED in (a.verdict, b.verdict) for a, b in checks)},
            # whether the intervals already held a run-to-run spread (rows that carry `run_to_run`)
            "with_run_to_run": any(f.interval.run_to_run for pair in both for f in pair if f.interval),
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
               f"({said['changed']} changed, {said.get('neither_a_call', 0)} of them between within noise and "
               f"inconclusive); interval half-width {width(said['half_width_median'])} at the median, "
               f"{width(said['half_width_p90'])} at the 90th percentile")
    controls = controls_said(said)  # the page's sentence; on its own line here
    if controls:
        out.append(controls.strip())
    for name, found in (said.get("calibration") or {}).items():
        out.append(f"{name}: the two ratios lay further apart than their intervals allow in {found['beyond']} of "
                   f"{found['compared']} comparisons (about 1 in 20 expected); run-to-run spread beyond the "
                   f"intervals ±{found['run_to_run']:.1%}")
    return out
