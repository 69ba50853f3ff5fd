"""findings: sentences from rows, on a CPU-like run and on seed 002's MI210 table."""
from vitlab.book import findings

COMMON = {"backend": "cpu", "notebook": "02_torch_compile", "model": "vit-b16-hf", "batch": 1, "group": "bf16",
          "sweep": False}


def _row(variant, ms, baseline=False, engaged=True, reason="", spread=None, **kw):
    return {**COMMON, "variant": variant, "median_ms": ms, "throughput": 1000.0 / ms, "baseline": baseline,
            "engaged": engaged, "reason": reason, "spread": spread, **kw}


def test_a_cpu_run_with_compile_modes_inside_the_noise_and_no_cuda_graphs():
    rows = [_row("eager", 113.0, baseline=True, spread=0.03),
            _row("default", 111.0, spread=0.02),
            _row("reduce-overhead", 112.5, engaged=False, reason="skipping cudagraphs due to cpu device"),
            _row("max-autotune", 98.0, spread=0.04)]
    said = {f.row["variant"]: f for f in findings.findings(rows)}
    assert said["default"].verdict == "within noise" and said["reduce-overhead"].verdict == "within noise"
    assert "not engaged: skipping cudagraphs due to cpu device" in str(said["reduce-overhead"])
    assert said["max-autotune"].verdict == "faster"           # 1.15x, outside the 5% band
    assert "1.15× eager (113 → 98 ms at batch 1) — faster" in str(said["max-autotune"])


def test_seed_002_mi210_table_says_reduce_overhead_is_faster_with_cuda_graphs():
    rows = [{**r, "backend": "cuda"} for r in (
        _row("eager", 7.56, baseline=True), _row("default", 7.03),
        _row("reduce-overhead", 3.24, reason="CUDA graphs engaged"))]
    said = {f.row["variant"]: f for f in findings.findings(rows)}
    assert said["reduce-overhead"].verdict == "faster" and round(said["reduce-overhead"].ratio, 2) == 2.33
    assert str(said["reduce-overhead"]).endswith("— faster; CUDA graphs engaged")
    assert said["default"].verdict == "faster"                # 1.075x: just outside ±5%
    assert findings.best(rows).startswith("fastest: reduce-overhead, 2.17× the runner-up default")


def test_the_band_is_the_largest_spread_and_skips_say_why():
    rows = [_row("eager", 10.0, baseline=True, spread=0.20), _row("compiled", 8.7),
            {**COMMON, "variant": "ipex", "baseline": False, "skipped": "IPEX unavailable: torch 2.14",
             "reason": "IPEX unavailable: torch 2.14"}]  # as make_row writes it
    compiled, ipex = findings.findings(rows)
    assert compiled.band == 0.20 and compiled.verdict == "within noise"  # 1.15x inside a ±20% band
    assert str(ipex) == "ipex: skipped — IPEX unavailable: torch 2.14"
    assert findings.best(rows).startswith("fastest: compiled and eager are within noise")


def test_a_rate_without_latency_is_said_in_items_per_second():
    rows = [{**COMMON, "variant": "1 process", "baseline": True, "throughput": 100.0, "median_ms": None},
            {**COMMON, "variant": "2 ranks", "throughput": 150.0, "median_ms": None, "spread": 0.1}]
    (two,) = findings.findings(rows)
    assert str(two) == "2 ranks: 1.50× 1 process (100 → 150 items/s at batch 1) — faster"


def test_latency_compares_per_call_time_and_several_instances_are_said_in_items_per_second():
    one = {**COMMON, "variant": "1x2", "batch": 1, "median_ms": 2.0, "throughput": 500.0, "instances": 1}
    two = {**COMMON, "variant": "2x1", "batch": 1, "median_ms": 3.0, "throughput": 666.0, "instances": 2}
    by_latency = findings.compare(two, one, latency=True)
    assert by_latency.verdict == "slower" and str(by_latency).startswith("2x1: 0.67× 1x2 (latency 2 → 3 ms at batch 1)")
    assert str(findings.compare(two, one)) == "2x1: 1.33× 1x2 (500 → 666 items/s at batch 1) — faster"
    assert findings.best([one, two], latency=True) == "fastest by latency: 1x2, 1.50× the runner-up 2x1 (beyond the ±5% band)"
    assert findings.best([one, two]).startswith("fastest: 2x1, 1.33× the runner-up 1x2")


def test_rows_compare_only_inside_their_group():
    rows = [_row("eager", 10.0, baseline=True), {**_row("eager", 5.0, baseline=True), "batch": 8},
            {**_row("default", 4.0), "batch": 8}, {**_row("orphan", 1.0), "group": "int8"}]
    (only,) = findings.findings(rows)
    assert only.row["variant"] == "default" and only.ratio == 1.25


def test_failed_and_skipped_rows_are_said_by_their_status_not_their_reason():
    base = _row("eager", 10.0, baseline=True)
    failed = {**COMMON, "variant": "max-autotune", "status": "failed", "reason": "InductorError: no compiler"}
    legacy = {**COMMON, "variant": "ipex", "skipped": "IPEX unavailable", "reason": "IPEX unavailable"}  # no status yet
    worded = _row("default", 5.0, reason="failed to look slow")  # a reason's words decide nothing
    assert [findings.compare(r, base).verdict for r in (failed, legacy, worded)] == ["failed", "skipped", "faster"]
    assert str(findings.compare(failed, base)) == "max-autotune: failed — InductorError: no compiler"


def test_glue_values_carry_the_words_and_the_rows_they_came_from():
    import json
    base, fast = _row("eager", 10.0, baseline=True, spread=0.02), _row("default", 8.0, spread=0.03)
    glued = findings.glue_values("compile", findings.compare(fast, base))
    assert {k: v for k, v in glued.items() if k != "compile_rows"} == {
        "compile_ratio": "1.25", "compile_verdict": "faster", "compile_band": "5%", "compile_status": "ok"}
    assert json.loads(glued["compile_rows"]) == {
        "row": {"model": "vit-b16-hf", "variant": "default", "batch": 1, "group": "bf16", "sweep": False},
        "baseline": {"model": "vit-b16-hf", "variant": "eager", "batch": 1, "group": "bf16", "sweep": False},
        "latency": False}
    skipped = findings.glue_values("ipex", findings.compare({**COMMON, "variant": "ipex", "skipped": "no", "reason": "no"}, base))
    assert (skipped["ipex_ratio"], skipped["ipex_verdict"], skipped["ipex_status"]) == ("–", "skipped", "skipped")


def test_above_ceiling_names_only_rows_faster_than_their_measured_ceiling():
    rows = [_row("OpenVINO fp32", 2.0, ceiling_fraction=1.054, ceiling_basis="measured: 407 GFLOP/s", spread=0.02),
            _row("ONNX Runtime fp32", 2.3, ceiling_fraction=0.91, ceiling_basis="measured: 407 GFLOP/s"),
            {**_row("IPEX int8", 1.0), "skipped": "no IPEX", "ceiling_fraction": None}]
    said = findings.above_ceiling(rows)
    assert said == ["OpenVINO fp32 at batch 1: 105% of the measured ceiling (measured: 407 GFLOP/s): the machine ran "
                    "this row faster than any GEMM call of the ceiling; its round spread is 2%"]
    assert findings.above_ceiling(rows[1:]) == []
