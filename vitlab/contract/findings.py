"""Rows -> verdicts and sentences: what a run showed, said from its own rows. Torch-free.

The one verdict rule of the book (`judge`):

- Each timed row keeps its per-round medians (`round_medians_ms`). A row and its baseline timed in the same
  interleaved call (the same `timing_session`) ran round k side by side, so their rounds pair up: the paired
  per-round speed ratios are the evidence (where one of them got extra rounds, its first ones pair with the
  other's). Rows timed apart (two launches, two stacks) are compared unpaired.
- The interval: a 95% Student-t confidence interval of the mean log speed ratio (paired: over the per-round log
  ratios; unpaired: Welch's interval on the two rows' log round speeds). Why t and not a bootstrap: a comparison
  has 5 to 30 rounds, and a percentile bootstrap on so few values gives intervals that are too narrow (it cannot
  see beyond the values it has); the t interval is exact for normal log ratios and widens honestly as rounds get
  few. Ratios are taken in logs, so 2× faster and 2× slower are the same distance from a tie.
- Drift: where a chapter times a second copy of the baseline beside it (a row with `control: true` in the same
  comparison group), the control's distance from the baseline is what the machine moved during the run; it is
  added to both ends of every interval of that group. The control itself is no optimisation: where its interval
  lies beyond the threshold it "drifted" (the same measurement came back that far), never "faster" or "slower".
- Run to run: what moves between two runs of a chapter on one machine (another compile, another memory layout,
  another spell of the shared host) is not in a run's rounds, and a second run judged only by them contradicts the
  first more often than their intervals allow. `vitlab compare-runs` measures that spread from two runs (its
  calibration); RUN_TO_RUN keeps what it measured per chapter on CPU, each CPU row records its chapter's value when
  it is made (`run_to_run`, a 95% half-width), and the interval adds it to the rounds' own (in quadrature, in logs:
  once for a paired comparison, which shares its run; once per row for rows of two runs). Rows without the field
  (older runs, other devices: not measured) are judged on their rounds alone.
- The threshold (THRESHOLD, 5%): "faster" only when the whole interval lies above 1 + threshold, "slower" only
  when it lies below 1 / (1 + threshold), "within noise" when it lies inside both, otherwise "inconclusive":
  the interval is too wide to say, or narrow but across the threshold (a difference of about the threshold's
  size, which another run could call either way). Fewer than MIN_ROUNDS rounds on either row: "inconclusive".
- Rounds: vitlab.timing.interleaved gives a comparison that is still inconclusive after its budget more rounds
  (up to the budget again; only the baseline and the undecided variants run in them), so a difference a little
  away from the threshold is decided rather than left open.
- A busy machine: each timed row records how much CPU other programs took while it was timed (`host_busy`, in
  cores; vitlab.timing.HostLoad reads it from /proc). Where either side of a comparison saw more than BUSY_CORES,
  the comparison is "inconclusive", whatever its interval: the interval measures the noise of the run, and another
  program's load is not noise that the next run shares (a second run on a quiet machine could contradict it).
- What a comparison is judged on is a field of the row (`judged_by`: "latency", the time one call waits, or
  "throughput", items per second summed over instances); every consumer reads it from there.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

from vitlab.contract.rows import comparison_key, status_of
from vitlab.contract.text import markdown_table, shorten

THRESHOLD = 0.05    # the practical threshold: a difference under 5% is not worth a verdict
MIN_ROUNDS = 5      # paired rounds a verdict needs
CONFIDENCE = 0.95   # of the interval
VERDICTS = ("faster", "slower", "within noise", "inconclusive")
BUSY_CORES = 0.25   # other programs using more than a quarter of a core meanwhile: a busy machine, no verdict
DRIFTED = "drifted"  # a control row (the baseline again) whose interval lies beyond the threshold

# The run-to-run spread beyond a run's own intervals (95% half-width) per chapter, on CPU: `vitlab compare-runs
# --rounds-only`'s calibration of three pairs of quick runs of chapters 01-05, each pair back to back, reference
# stack: two on a 2-core AMD EPYC Zen 4 (AVX512; 2026-12-06 and 2026-12-07), one on a 2-core AMD EPYC Zen 5 (AVX512;
# 2026-12-07, its first run on a fresh machine), pooled (the root mean square of the three pairs' values, in logs).
# The second and third pairs' rows are in book/results/repeat/ (the first pair's were not kept). Chapters not listed
# get the overall value.
RUN_TO_RUN = {"01_port_to_xpu": 0.015, "02_torch_compile": 0.011, "03_ipex_bf16_int8": 0.123,
              "04_hardware_integration": 0.125, "05_deploy_after_ipex": 0.115}
RUN_TO_RUN_ALL = 0.100


def run_to_run_for(notebook: str | None, device_type: str) -> float | None:
    """The run-to-run spread a row of `notebook` on `device_type` carries (RUN_TO_RUN); None off the CPU (not
    measured there)."""
    if device_type != "cpu":
        return None
    return RUN_TO_RUN.get(notebook or "", RUN_TO_RUN_ALL)

# Student t's two-sided 95% quantile by degrees of freedom (1..30); beyond 30 the normal's 1.96 plus a correction.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t_quantile(df: float) -> float:
    """Student t's 97.5% quantile for `df` degrees of freedom (fractional df from Welch: interpolated)."""
    if df >= len(_T975):
        return 1.95996 + 2.4 / df  # within 0.002 of the exact value for df > 30
    low = max(1, int(df))
    high = min(low + 1, len(_T975))
    return _T975[low - 1] + (_T975[high - 1] - _T975[low - 1]) * (df - low)


def judged_by(row: dict) -> str:
    """What the row's comparison is judged on: its `judged_by` field; rows without one by throughput."""
    return row.get("judged_by") or "throughput"


def round_speeds(row: dict, by: str) -> list[float]:
    """The row's speed in each round: calls per second (latency) or items per second (throughput)."""
    medians = [m for m in row.get("round_medians_ms") or [] if m]
    if by == "throughput" and row.get("round_throughputs"):
        return list(row["round_throughputs"])
    if by == "throughput":
        return [(row.get("batch") or 1) * (row.get("instances") or 1) * 1000.0 / m for m in medians]
    return [1000.0 / m for m in medians]


def _mean_sd(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0


@dataclass(frozen=True)
class Interval:
    """A speed ratio (row over baseline, > 1: the row is faster) with its 95% interval, in plain ratios."""

    ratio: float
    low: float
    high: float
    rounds: int          # rounds of evidence (paired: pairs; unpaired: the fewer of the two rows')
    paired: bool
    drift: float = 0.0   # relative drift of the group's control row, added to both ends
    busy: float = 0.0    # cores other programs used while either side was timed (the more of the two)
    run_to_run: float = 0.0  # the run-to-run spread in the interval (a 95% half-width; 0: rounds alone)

    @property
    def half_width(self) -> float:
        """The interval's half-width as a fraction of the ratio (in logs: ±5% reads 0.05)."""
        return math.expm1((math.log(self.high) - math.log(self.low)) / 2)


def interval(row: dict, baseline: dict, by: str, drift: float = 0.0) -> Interval | None:
    """The interval of row's speed over baseline's, from their rounds; None when either has fewer than 2 rounds."""
    mine, theirs = round_speeds(row, by), round_speeds(baseline, by)
    if len(mine) < 2 or len(theirs) < 2:
        return None
    same = row.get("timing_session") and row.get("timing_session") == baseline.get("timing_session")
    if same:  # round k beside round k; extra rounds of one of them (an undecided comparison's) pair with nothing
        logs = [math.log(a / b) for a, b in zip(mine, theirs)]
        centre, sd = _mean_sd(logs)
        half, n = t_quantile(len(logs) - 1) * sd / math.sqrt(len(logs)), len(logs)
    else:  # Welch: two independent sets of rounds
        (m1, s1), (m2, s2) = _mean_sd([math.log(v) for v in mine]), _mean_sd([math.log(v) for v in theirs])
        v1, v2 = s1 ** 2 / len(mine), s2 ** 2 / len(theirs)
        df = (v1 + v2) ** 2 / ((v1 ** 2 / (len(mine) - 1)) + (v2 ** 2 / (len(theirs) - 1))) if v1 + v2 else 1e9
        centre, half, n = m1 - m2, t_quantile(df) * math.sqrt(v1 + v2), min(len(mine), len(theirs))
    level = run_level(row, baseline, bool(same))
    half = math.hypot(half, math.log1p(level)) + math.log1p(drift)
    busy = max(row.get("host_busy") or 0.0, baseline.get("host_busy") or 0.0)
    return Interval(math.exp(centre), math.exp(centre - half), math.exp(centre + half), n, bool(same), drift, busy,
                    level)


def run_level(row: dict, baseline: dict, paired: bool) -> float:
    """The run-to-run spread a comparison of `row` with `baseline` carries (a 95% half-width): a paired comparison
    shares one run's offset (the larger of the two rows' values), rows of two runs each bring their own."""
    mine, theirs = (math.log1p(r.get("run_to_run") or 0.0) for r in (row, baseline))
    return math.expm1(max(mine, theirs) if paired else math.hypot(mine, theirs))


def judge(found: Interval | None, threshold: float = THRESHOLD) -> str:
    """The verdict on an interval: faster | slower | within noise | inconclusive (see the module's rule)."""
    if found is None or found.rounds < MIN_ROUNDS or found.busy > BUSY_CORES:
        return "inconclusive"
    if found.low > 1 + threshold:
        return "faster"
    if found.high < 1 / (1 + threshold):
        return "slower"
    if found.low >= 1 / (1 + threshold) and found.high <= 1 + threshold:
        return "within noise"
    return "inconclusive"


def decidable(found: Interval, threshold: float = THRESHOLD) -> bool:
    """Whether more rounds could still decide an inconclusive interval: judged as if its rounds' own noise were
    gone and only its run-to-run spread left (more rounds narrow the one, never the other)."""
    spread = 1 + found.run_to_run
    limit = Interval(found.ratio, found.ratio / spread, found.ratio * spread, max(found.rounds, MIN_ROUNDS), True)
    return judge(limit, threshold) != "inconclusive"


def control_drift(row: dict, baseline: dict) -> float:
    """How far a control row (a second copy of the baseline, timed beside it) moved from the baseline: the
    interval's far end from a tie, as a fraction (0.0 when it cannot be measured)."""
    found = interval(row, baseline, judged_by(row))
    return 0.0 if found is None else max(found.high - 1, 1 - found.low, 0.0)


@dataclass(frozen=True)
class Finding:
    """One variant against another (its group's baseline, a runner-up, the other stack's row)."""

    row: dict
    baseline: dict
    ratio: float | None        # speed ratio, > 1: `row` is faster; None when either has no timing
    interval: Interval | None  # None: too few rounds to build one
    by: str = "throughput"     # what it is judged on: "latency" or "throughput"
    threshold: float = THRESHOLD
    control: dict | None = None  # the group's second copy of the baseline whose drift widened the interval

    @property
    def verdict(self) -> str:
        status = status_of(self.row)
        if status in ("skipped", "failed"):
            return status
        if self.ratio is None:
            return "not timed"
        verdict = judge(self.interval, self.threshold)
        return DRIFTED if self.is_drift() and verdict in ("faster", "slower") else verdict

    def is_drift(self) -> bool:
        """Whether this compares a control row with its own run's baseline: the same measurement twice."""
        return bool(self.row.get("control") and self.baseline.get("baseline")
                    and self.row.get("run_id") == self.baseline.get("run_id"))

    @property
    def band(self) -> float | None:
        """The interval's half-width (a fraction of the ratio), None without an interval."""
        return None if self.interval is None else self.interval.half_width

    def evidence(self) -> str:
        """'1.32×, 95% interval 1.25–1.40× over 8 paired rounds' (or why there is no interval)."""
        if self.interval is None or self.interval.rounds < MIN_ROUNDS:
            rounds = 0 if self.interval is None else self.interval.rounds
            return f"{self.ratio:.2f}× from {rounds} rounds; a verdict needs {MIN_ROUNDS}"
        i = self.interval
        how = "paired" if i.paired else "unpaired"
        notes = f", widened by the baseline's own drift of {i.drift:.0%}" if i.drift else ""
        if i.run_to_run:
            notes += f", run-to-run ±{i.run_to_run:.0%} included"
        return f"{self.ratio:.2f}×, 95% interval {i.low:.2f}–{i.high:.2f}× over {i.rounds} {how} rounds{notes}"

    def said(self, engaged_note: bool = True) -> str:
        """This finding as the end of a sentence whose subject is the variant: '… was <said>.' (`engaged_note=False`:
        without the note on a feature that did not engage, for a sentence that says what the feature did itself)."""
        against = self.baseline.get("label") or self.baseline.get("variant")  # a row's name for sentences
        verdict = self.verdict
        why = shorten((str(self.row.get("reason") or "no reason recorded").splitlines() or [""])[0], 140)
        if verdict == "failed":
            return f"not measured: it failed here {because(why)}"
        if verdict == "skipped":
            return f"not measured: skipped here {because(why)}"
        if verdict == "not timed":
            return f"not timed {because(why)}"
        by = " in latency" if self.by == "latency" else ""
        evidence = self.evidence()
        if verdict == "within noise":
            text = f"within noise of {against}{by} ({evidence}, inside ±{self.threshold:.0%})"
        elif verdict == "inconclusive":
            text = f"not told apart from {against}{by}: {self.undecided_because()} ({evidence})"
        elif verdict == DRIFTED:  # the same measurement again: the machine moved, nothing got faster
            text = f"the same as {against}, re-timed: it drifted{by} beyond ±{self.threshold:.0%} ({evidence})"
        else:
            text = f"{verdict} than {against}{by} ({evidence})"
        if engaged_note and status_of(self.row) == "not engaged":
            text += f"; its feature did not engage {because(why)}"
        return text

    def undecided_because(self) -> str:
        """Why an inconclusive finding is one: too few rounds; an interval on one side of a tie that reaches across
        the threshold (a difference about the threshold's size: another run could call it either way); or an
        interval that holds a tie and a difference beyond the threshold (too wide to call)."""
        i = self.interval
        if i is None or i.rounds < MIN_ROUNDS:
            return "too few rounds"
        if i.busy > BUSY_CORES:
            return f"other programs used {i.busy:.2f} cores of this machine while it was timed"
        one_side = i.low > 1 or i.high < 1
        if not one_side and i.run_to_run > self.threshold:
            return (f"what moves from one run to the next in this chapter (±{i.run_to_run:.0%}) is wider than the "
                    f"±{self.threshold:.0%} threshold")
        if one_side or i.half_width <= self.threshold:
            return f"the interval reaches across the ±{self.threshold:.0%} threshold"
        return "the interval is too wide to call"

    def __str__(self) -> str:
        return f"{self.row.get('variant')} at batch {self.row.get('batch')}: {self.said()}"


ACCURACY_BAND = 0.01  # held-out top-1 within one point of the reference's (in whole images): a tie


def accuracy_said(top1: float, reference: float, images: int, against: str = "fp32",
                  band: float = ACCURACY_BAND) -> str:
    """A variant's held-out top-1 against the reference's, as the end of a sentence whose subject is the variant:
    'kept fp32's held-out top-1 (430 of 450 images right)', 'stayed within 1 point of fp32's held-out top-1
    (+0.7 points: 3 more of 450 images right)', 'lost 2.4 points of held-out top-1 against fp32 (11 fewer of 450
    images right), more than the 1-point band'. Counts are images, rounded from the two accuracies."""
    more = round((top1 - reference) * images)
    right = f"{round(top1 * images)} of {images} images right"
    if more == 0:
        return f"kept {against}'s held-out top-1 ({right})"
    images_said = f"{abs(more)} {'more' if more > 0 else 'fewer'} of {images} images right"
    points = 100 * (top1 - reference)
    if abs(more) <= band * images:  # in whole images, as said: 5 of 450 (1.1 points) is outside a 1-point band
        return f"stayed within {100 * band:g} point of {against}'s held-out top-1 ({points:+.1f} points: {images_said})"
    return (f"{'gained' if more > 0 else 'lost'} {abs(points):.1f} points of held-out top-1 against {against} "
            f"({images_said}), more than the {100 * band:g}-point band")


def because(why: str) -> str:
    """'(why: …)', or '— why: …' where the reason has brackets of its own (no '(why: … (…))')."""
    return f"— why: {why}" if "(" in why or ")" in why else f"(why: {why})"


def whiskers(found: list[Finding | None]) -> list[list[float]]:
    """matplotlib's `xerr`/`yerr` for findings drawn as bars of their ratio: [below, above], each finding's 95%
    interval around its ratio (0 where a finding has no interval: too few rounds, not timed, or None)."""
    spans = [(f.interval.ratio - f.interval.low, f.interval.high - f.interval.ratio) if f and f.interval
             else (0.0, 0.0) for f in found]
    return [[below for below, _ in spans], [above for _, above in spans]]


def ratio_bars(ax, found: list[Finding], baseline: str, names: list[str] | None = None):
    """Findings drawn on matplotlib axes `ax` as horizontal bars of their ratio: the baseline at 1× in grey, then
    one bar per finding (named by `names`, else its row's variant) with its 95% interval as whiskers, a line at
    1× and each bar labelled with its ratio; untimed findings are left out."""
    timed = [(f, n) for f, n in zip(found, names or [f.row["variant"] for f in found]) if f.ratio]
    ratios = [1.0] + [f.ratio for f, _ in timed]
    below, above = ([0.0] + side for side in whiskers([f for f, _ in timed]))
    ax.barh([baseline] + [n for _, n in timed], ratios, xerr=[below, above], capsize=3,
            color=["tab:gray"] + ["tab:blue"] * len(timed))
    for i, (ratio, up) in enumerate(zip(ratios, above)):
        ax.text(ratio + up, i, f" {ratio:.2f}×", va="center")
    ax.axvline(1, color="black", lw=0.8)
    ax.margins(x=0.2)


def compare(row: dict, baseline: dict, control: dict | None = None, threshold: float = THRESHOLD) -> Finding:
    """`row` against `baseline`, judged on the row's `judged_by`, widened by `control`'s drift where one is given."""
    by = judged_by(row)
    timed = status_of(row) not in ("skipped", "failed") and (row.get("median_ms") or row.get("throughput"))
    if not (timed and (baseline.get("median_ms") or baseline.get("throughput"))):
        return Finding(row, baseline, None, None, by, threshold, control)
    drift = control_drift(control, baseline) if control is not None else 0.0
    found = interval(row, baseline, by, drift)  # None without 2 rounds on each side
    if found is not None:
        ratio = found.ratio
    else:  # no rounds: the overall figures' ratio, said but never judged
        key = "median_ms" if by == "latency" and row.get("median_ms") and baseline.get("median_ms") else "throughput"
        if not (row.get(key) and baseline.get(key)):
            return Finding(row, baseline, None, None, by, threshold, control)
        ratio = baseline[key] / row[key] if key == "median_ms" else row[key] / baseline[key]
    return Finding(row, baseline, ratio, found, by, threshold, control)


def controls(rows: list[dict]) -> dict[tuple, dict]:
    """The control row (`control: true`, a second copy of the baseline) of each comparison group that has one."""
    return {comparison_key(r): r for r in rows if r.get("control")}


def findings(rows: list[dict], **match) -> list[Finding]:
    """Every non-baseline row (matching `match`, e.g. model=..., sweep=False) against its group's baseline,
    widened by the group's control row where it has one."""
    baselines = {comparison_key(r): r for r in rows if r.get("baseline")}
    control = controls(rows)
    picked = [r for r in rows if all(r.get(k) == v for k, v in match.items())]
    return [compare(r, baselines[comparison_key(r)], None if r.get("control") else control.get(comparison_key(r)))
            for r in picked if not r.get("baseline") and comparison_key(r) in baselines]


def speed(row: dict) -> float:
    """The row's speed by its own `judged_by` (calls or items per second), 0 without a timing."""
    if judged_by(row) == "latency":
        return 1000.0 / row["median_ms"] if row.get("median_ms") else 0.0
    return row.get("throughput") or 0.0


@dataclass(frozen=True)
class Leader:
    """The fastest of several rows, and whether the rule lets the page call it that."""

    row: dict | None           # the fastest measured row (None: nothing was timed)
    runner_up: Finding | None  # the leader against the second fastest (None: one row or none)

    @property
    def decided(self) -> bool:
        return self.runner_up is not None and self.runner_up.verdict == "faster"

    def said(self) -> str:
        """'max-autotune, faster than the runner-up default (…)' or the tie, said as a tie."""
        if self.row is None:
            return "nothing was timed"
        name = self.row.get("variant")
        if self.runner_up is None:
            return f"{name} (the only one timed)"
        second = self.runner_up.baseline.get("variant")
        if self.decided:
            return f"{name}, faster than the runner-up {second} ({self.runner_up.evidence()})"
        return (f"no single fastest: the top two, {name} and {second}, were not told apart "
                f"({self.runner_up.verdict}: {self.runner_up.evidence()})")


def leader(rows: list[dict]) -> Leader:
    """The fastest timed row among `rows` (by their `judged_by` speed) against the runner-up, under the rule."""
    timed = sorted((r for r in rows if speed(r) and status_of(r) not in ("skipped", "failed")), key=speed,
                   reverse=True)
    if not timed:
        return Leader(None, None)
    if len(timed) == 1:
        return Leader(timed[0], None)
    first = compare(timed[0], timed[1])
    if first.ratio is not None and first.ratio < 1:  # the rounds' ratio is what the rule judges: it orders the two
        return Leader(timed[1], compare(timed[1], timed[0]))
    return Leader(timed[0], first)


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
    """What a chapter glues for one finding: `key_said` (the sentence's end: '… was faster than eager fp32 (…)'),
    `key_verdict` (faster | slower | within noise | inconclusive | skipped | failed | not timed), `key_ratio`
    ('1.23' or '–'), `key_band` ('±3%' or '–'), `key_status`, and `key_rows`: which rows and how (JSON), so a test
    recomputes the finding from the committed rows."""
    return {f"{key}_said": finding.said(),
            f"{key}_ratio": "–" if finding.ratio is None else f"{finding.ratio:.2f}",
            f"{key}_verdict": finding.verdict,
            f"{key}_band": "–" if finding.band is None else f"±{finding.band:.0%}",
            f"{key}_status": status_of(finding.row),
            f"{key}_rows": json.dumps({"row": row_id(finding.row), "baseline": row_id(finding.baseline),
                                       "control": None if finding.control is None else row_id(finding.control)})}


def table(found: list[Finding]):
    """Findings as one compact Markdown table (variant, against, batch, ratio, interval, verdict, note); a batch-sweep
    row's variant is marked "(sweep)", so that it is not read as a second result of the same comparison."""
    def interval_of(f: Finding) -> str:
        return "" if f.interval is None else f"{f.interval.low:.2f}–{f.interval.high:.2f}× ({f.interval.rounds})"

    def variant_of(f: Finding) -> str:
        return f"{f.row.get('variant')} (sweep)" if f.row.get("sweep") else str(f.row.get("variant"))
    rows = [{"variant": variant_of(f), "against": f.baseline.get("variant"), "batch": f.row.get("batch"),
             "judged by": f.by, "ratio": f.ratio, "95% interval (rounds)": interval_of(f), "verdict": f.verdict,
             "status": status_of(f.row), "note": f.row.get("reason") or ""} for f in found]
    return markdown_table(rows, {"ratio": lambda r: f"{r:.2f}×"}, limit=70)
