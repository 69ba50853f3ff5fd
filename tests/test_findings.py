"""findings: the verdict rule on synthetic rounds, the sentence for every status, leaders only when decided."""
import json
import random

import pytest

from vitlab.contract import findings

COMMON = {"backend": "cpu", "notebook": "02_torch_compile", "model": "vit-b16-hf", "batch": 1, "group": "bf16",
          "sweep": False, "timing_session": "s1"}


def _rounds(ms: float, n: int, jitter: float, seed: int, drift: float = 0.0) -> list[float]:
    """n round medians around `ms`, each off by up to ±jitter (uniform), drifting linearly by `drift` overall."""
    rng = random.Random(seed)
    return [ms * (1 + drift * k / max(1, n - 1)) * (1 + rng.uniform(-jitter, jitter)) for k in range(n)]


def _row(variant, ms, rounds=None, baseline=False, **kw):
    rounds = rounds if rounds is not None else [ms] * 8
    return {**COMMON, "variant": variant, "median_ms": ms, "throughput": 1000.0 / ms, "baseline": baseline,
            "round_medians_ms": rounds, "engaged": True, "reason": "", **kw}


def _pair(ratio: float, jitter: float, n: int = 8, seed: int = 0):
    """A baseline and a row `ratio`× faster, both with `jitter` per round, timed side by side (paired)."""
    base, rng = _rounds(100.0, n, jitter, seed), random.Random(seed + 1)
    mine = [b / ratio * (1 + rng.uniform(-jitter, jitter)) for b in base]
    return _row("variant", 100.0 / ratio, mine), _row("eager", 100.0, base, baseline=True)


@pytest.mark.parametrize("seed", range(5))
def test_a_3_percent_gain_with_3_percent_jitter_is_not_called_faster(seed):
    row, base = _pair(1.03, 0.03, seed=seed)
    assert findings.compare(row, base).verdict in ("within noise", "inconclusive")


@pytest.mark.parametrize("seed", range(5))
def test_a_1_5x_gain_with_3_percent_jitter_is_faster_and_its_inverse_slower(seed):
    row, base = _pair(1.5, 0.03, seed=seed)
    found = findings.compare(row, base)
    assert found.verdict == "faster" and found.interval.low > 1.05 and found.interval.paired
    assert findings.compare(base, row).verdict == "slower"


def test_identical_rows_are_within_noise():
    row, base = _pair(1.0, 0.005)
    found = findings.compare(row, base)
    assert found.verdict == "within noise" and found.band < 0.05


def test_1_07x_with_a_baseline_that_drifted_7_percent_is_not_faster():
    base_rounds = _rounds(100.0, 8, 0.005, 3)
    row = _row("compile", 100 / 1.07, [b / 1.07 for b in base_rounds])
    base = _row("eager", 100.0, base_rounds, baseline=True)
    control = _row("eager (re-timed)", 107.0, [b * 1.07 for b in base_rounds], control=True)
    assert findings.compare(row, base).verdict == "faster"  # without the drift: tight and clear
    widened = findings.compare(row, base, control=control)
    assert widened.verdict != "faster" and widened.interval.drift == pytest.approx(0.07, abs=0.01)
    # findings() finds the group's control row by itself
    said = {f.row["variant"]: f for f in findings.findings([base, row, control])}
    assert said["compile"].verdict == said["compile"].verdict != "faster"


def test_a_control_beyond_the_threshold_drifted_and_is_never_faster():
    # The baseline re-timed (a control) that came back 1.4x: the machine moved, nothing got faster. Against another
    # run's baseline (the other stack's row) the same row is an ordinary comparison again.
    base_rounds = _rounds(100.0, 8, 0.01, 4)
    base = _row("serve fp32 1x2", 100.0, base_rounds, baseline=True, run_id="A")
    control = _row("serve fp32 1x2 (re-timed)", 100 / 1.4, [b / 1.4 for b in base_rounds], control=True, run_id="A")
    found = findings.compare(control, base)
    assert found.verdict == "drifted" and "drifted" in found.said() and "faster" not in found.said()
    assert findings.compare(control, {**base, "run_id": "B"}).verdict == "faster"
    from vitlab.book.report import agreement
    assert agreement("drifted", "drifted") == "same" and agreement("drifted", "within noise") == "one undecided"


def test_a_clear_gain_timed_on_a_busy_machine_is_inconclusive_and_says_so():
    row, base = _pair(1.5, 0.03)
    assert findings.compare({**row, "host_busy": 0.1}, base).verdict == "faster"  # a quiet machine: judged
    for busy_row, busy_base in (({**row, "host_busy": 0.9}, base), (row, {**base, "host_busy": 0.6})):
        found = findings.compare(busy_row, busy_base)
        assert found.verdict == "inconclusive" and found.interval.busy >= 0.6
        assert "other programs used" in found.said() and "cores of this machine" in found.said()


def test_two_rounds_are_inconclusive_and_say_why():
    row, base = _row("compile", 50.0, [50.0, 50.2]), _row("eager", 100.0, [100.0, 100.1], baseline=True)
    found = findings.compare(row, base)
    assert found.verdict == "inconclusive" and "too few rounds" in found.said()


def test_rows_without_rounds_get_a_ratio_but_no_verdict():
    row, base = _row("compile", 50.0, []), _row("eager", 100.0, [], baseline=True)
    found = findings.compare(row, base)
    assert found.ratio == pytest.approx(2.0) and found.verdict == "inconclusive"


def test_rows_of_different_sessions_are_compared_unpaired_and_wider():
    base_rounds = _rounds(100.0, 8, 0.04, 7)  # a noisy machine: both rows move together, round by round
    row = _row("compile", 100 / 1.2, [b / 1.2 * f for b, f in zip(base_rounds, _rounds(1.0, 8, 0.005, 8))])
    base = _row("eager", 100.0, base_rounds, baseline=True)
    paired = findings.compare(row, base).interval
    apart = findings.compare({**row, "timing_session": "other"}, base).interval
    assert paired.paired and not apart.paired
    assert apart.high / apart.low > paired.high / paired.low  # pairing removes the shared noise


def test_the_judged_by_field_decides_latency_or_throughput():
    # 2 instances of batch 1: each call waits longer, but together they serve more images per second
    base = _row("1x2", 10.0, [10.0] * 6, instances=1, judged_by="latency")
    two = _row("2x1", 15.0, [15.0] * 6, instances=2, timing_session="s2")
    by_latency = findings.compare({**two, "judged_by": "latency"}, base)
    by_rate = findings.compare({**two, "judged_by": "throughput"}, base)
    assert by_latency.by == "latency" and by_latency.ratio == pytest.approx(10 / 15)
    assert by_rate.by == "throughput" and by_rate.ratio == pytest.approx(2 * 10 / 15)
    rates = findings.compare({**two, "judged_by": "throughput", "round_throughputs": [150.0] * 6}, base)
    assert rates.ratio == pytest.approx(150 / 100)  # the row's own per-round rates where it has them


@pytest.mark.parametrize("status, field, said", [
    ("failed", "failed", "not measured: it failed here (why: TypeError: expected Tensor)"),
    ("skipped", "skipped", "not measured: skipped here (why: TypeError: expected Tensor)")])
def test_failed_and_skipped_read_as_english_not_as_a_ratio(status, field, said):
    base = _row("eager", 10.0, baseline=True)
    row = {**COMMON, "variant": "compile", "status": status, field: "x", "reason": "TypeError: expected Tensor\nmore"}
    found = findings.compare(row, base)
    assert found.verdict == status and found.said() == said and "–×" not in str(found)
    glued = findings.glue_values("compile", found)
    assert glued["compile_ratio"] == "–" and glued["compile_band"] == "–" and glued["compile_said"] == said


def test_a_timed_row_not_engaged_says_both_its_verdict_and_why():
    row, base = _pair(1.0, 0.005)
    row = {**row, "status": "not engaged", "engaged": False, "reason": "skipping cudagraphs due to cpu device"}
    said = findings.compare(row, base).said()
    assert said.startswith("within noise of eager") and said.endswith("(why: skipping cudagraphs due to cpu device)")


def test_a_leader_is_named_only_when_it_beats_the_runner_up():
    base = _rounds(100.0, 8, 0.01, 1)
    tie = [_row("default", 100.0, [b * 1.005 for b in base]), _row("max-autotune", 99.0, [b * 0.99 for b in base]),
           _row("eager", 101.0, [b * 1.01 for b in base], baseline=True)]
    found = findings.leader(tie)
    assert not found.decided and found.said().startswith("no single fastest: the top two, max-autotune and default")
    clear = tie + [_row("reduce-overhead", 50.0, [b / 2 for b in base])]
    found = findings.leader(clear)
    assert found.decided and found.said().startswith("reduce-overhead, faster than the runner-up max-autotune")


def test_glue_values_carry_the_words_and_the_rows_they_came_from():
    row, base = _pair(1.25, 0.01)
    glued = findings.glue_values("compile", findings.compare(row, base))
    assert (glued["compile_ratio"], glued["compile_verdict"], glued["compile_status"]) == ("1.25", "faster", "ok")
    assert glued["compile_said"].startswith("faster than eager (1.25×, 95% interval 1.2")
    by_latency = findings.glue_values("compile", findings.compare({**row, "judged_by": "latency"}, base))
    assert by_latency["compile_said"].startswith("faster than eager in latency (1.25×")
    assert json.loads(glued["compile_rows"]) == {
        "row": {"model": "vit-b16-hf", "variant": "variant", "batch": 1, "group": "bf16", "sweep": False},
        "baseline": {"model": "vit-b16-hf", "variant": "eager", "batch": 1, "group": "bf16", "sweep": False},
        "control": None}


def test_rows_compare_only_inside_their_group():
    rows = [_row("eager", 10.0, baseline=True), {**_row("eager", 5.0, baseline=True), "batch": 8},
            {**_row("default", 4.0), "batch": 8}, {**_row("orphan", 1.0), "group": "int8"}]
    (only,) = findings.findings(rows)
    assert only.row["variant"] == "default" and only.ratio == pytest.approx(1.25)


def test_t_quantile_matches_the_table_and_the_normal_limit():
    assert findings.t_quantile(4) == pytest.approx(2.776) and findings.t_quantile(4.5) == pytest.approx(2.6735)
    assert abs(findings.t_quantile(200) - 1.972) < 0.002


def test_above_ceiling_names_only_rows_faster_than_their_measured_ceiling():
    rows = [_row("OpenVINO fp32", 2.0, ceiling_fraction=1.054, ceiling_basis="measured: 407 GFLOP/s", spread=0.02),
            _row("ONNX Runtime fp32", 2.3, ceiling_fraction=0.91, ceiling_basis="measured: 407 GFLOP/s"),
            {**_row("IPEX int8", 1.0), "skipped": "no IPEX", "ceiling_fraction": None}]
    said = findings.above_ceiling(rows)
    assert said == ["OpenVINO fp32 at batch 1: 105% of the measured ceiling (measured: 407 GFLOP/s): the machine ran "
                    "this row faster than any GEMM call of the ceiling; its round spread is 2%"]
    assert findings.above_ceiling(rows[1:]) == []


def test_an_inconclusive_finding_says_whether_its_interval_is_wide_or_sits_at_the_threshold():
    base = {"variant": "eager", "batch": 1, "median_ms": 10.0, "timing_session": "s", "judged_by": "latency",
            "round_medians_ms": [10.0] * 12}
    edge = dict(base, variant="compiled", median_ms=9.5,  # 1.05x faster, a narrow interval across 1.05
                round_medians_ms=[10 / (1.05 * (1 + 0.01 * (-1) ** k)) for k in range(12)])
    wide = dict(edge, round_medians_ms=[10 / (1.05 * (1 + 0.3 * (-1) ** k)) for k in range(12)])
    # 1.10x, an interval wider than the threshold but wholly above a tie: it reaches across 1.05, it is not "wide"
    above = dict(edge, round_medians_ms=[10 / (1.10 * (1 + 0.11 * (-1) ** k)) for k in range(12)])
    at_edge, too_wide, one_side = (findings.compare(r, base) for r in (edge, wide, above))
    assert at_edge.verdict == too_wide.verdict == one_side.verdict == "inconclusive"
    assert at_edge.band <= findings.THRESHOLD < min(too_wide.band, one_side.band)
    assert too_wide.interval.low < 1 < too_wide.interval.high and 1 < one_side.interval.low < 1 + findings.THRESHOLD
    for found in (at_edge, one_side):
        assert "reaches across the ±5% threshold" in found.said() and "too wide" not in found.said()
    assert "too wide" in too_wide.said()


def test_a_reason_with_brackets_of_its_own_is_not_bracketed_again():
    row = {"variant": "ipex", "batch": 1, "status": "skipped",
           "reason": "IPEX unavailable: not installed (archived; 2.8 is the last)"}
    said = findings.compare(row, {"variant": "eager", "batch": 1, "median_ms": 1.0}).said()
    assert said == "not measured: skipped here — why: IPEX unavailable: not installed (archived; 2.8 is the last)"
    assert findings.because("no IPEX") == "(why: no IPEX)"


def test_a_shortened_reason_closes_the_brackets_its_cut_left_open():
    from vitlab.contract.text import shorten
    reason = "0 op(s) autotuned (on CPU Inductor autotunes GEMMs only with freezing=True, which this mode did not set)"
    cut = shorten(reason, 60)
    assert len(cut) <= 60 and cut.count("(") == cut.count(")") and "…" in cut
    assert cut.startswith("0 op(s) autotuned (on CPU Inductor")
    assert shorten("short (and whole)", 60) == "short (and whole)"


def test_whiskers_span_each_findings_95_percent_interval_around_its_ratio_and_none_without_one():
    row, base = _pair(1.5, 0.03)
    found = findings.compare(row, base)
    untimed = findings.compare({**row, "median_ms": None, "throughput": None, "round_medians_ms": []}, base)
    below, above = findings.whiskers([found, untimed, None])  # None: a bar with no finding (the baseline's)
    assert found.ratio - below[0] == pytest.approx(found.interval.low)
    assert found.ratio + above[0] == pytest.approx(found.interval.high)
    assert below[0] > 0 and above[0] > 0 and below[1:] == above[1:] == [0.0, 0.0]


def test_an_accuracy_change_is_said_in_images_and_a_change_inside_the_band_is_not_a_gain():
    said = findings.accuracy_said
    assert said(430 / 450, 430 / 450, 450) == "kept fp32's held-out top-1 (430 of 450 images right)"
    assert said(433 / 450, 430 / 450, 450) == ("stayed within 1 point of fp32's held-out top-1 (+0.7 points: 3 more "
                                               "of 450 images right)")
    assert said(419 / 450, 430 / 450, 450, against="eager fp32") == (
        "lost 2.4 points of held-out top-1 against eager fp32 (11 fewer of 450 images right), "
        "more than the 1-point band")
    assert said(441 / 450, 430 / 450, 450).startswith("gained 2.4 points")
    assert said(435 / 450, 430 / 450, 450).startswith("gained 1.1 points")  # 5 images: more than 1 point of 450
    assert said(434 / 450, 430 / 450, 450).startswith("stayed within 1 point")  # 4 images: 0.9 points


def test_the_run_to_run_spread_a_row_records_widens_its_interval_and_keeps_a_near_threshold_gain_undecided():
    row, base = _pair(1.12, 0.01, n=12)
    assert findings.compare(row, base).verdict == "faster"  # the rounds alone: tight and clear
    spread = findings.compare({**row, "run_to_run": 0.086}, {**base, "run_to_run": 0.086})
    assert spread.interval.run_to_run == pytest.approx(0.086)  # paired: one run's offset, counted once
    assert spread.verdict == "inconclusive" and spread.interval.low < 1.05 < spread.interval.high
    assert "run-to-run ±9% included" in spread.evidence()
    big = findings.compare({**_pair(1.5, 0.01)[0], "run_to_run": 0.086}, {**base, "run_to_run": 0.086})
    assert big.verdict == "faster"  # a real gain clears any spread the chapters measured
    tie = findings.compare({**_pair(1.0, 0.005)[0], "run_to_run": 0.16}, {**base, "run_to_run": 0.16})
    assert tie.verdict == "inconclusive" and "wider than the ±5% threshold" in tie.said()  # never a tie it cannot see
    apart = findings.compare({**row, "run_to_run": 0.05, "timing_session": "x"}, {**base, "run_to_run": 0.05})
    assert apart.interval.run_to_run == pytest.approx(1.05 ** 2 ** 0.5 - 1, abs=1e-9)  # two runs: each its own offset


def test_cpu_rows_carry_their_chapters_measured_run_to_run_spread_and_other_devices_none():
    assert findings.run_to_run_for("05_deploy_after_ipex", "cpu") == findings.RUN_TO_RUN["05_deploy_after_ipex"]
    assert findings.run_to_run_for("a chapter not measured", "cpu") == findings.RUN_TO_RUN_ALL
    assert findings.run_to_run_for("05_deploy_after_ipex", "cuda") is None
