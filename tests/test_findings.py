"""findings: sentences from rows, on a CPU-like run and on seed 002's MI210 table."""
from vitlab import findings

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
            {**COMMON, "variant": "ipex", "baseline": False, "skipped": "IPEX unavailable: torch 2.14"}]
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


# --- the committed book: what each executed page printed is what its own rows say ---------------------------------

import json  # noqa: E402

import pytest  # noqa: E402

from vitlab import layout, results  # noqa: E402

BOOK = layout.ROOT / "book"
PAGES = sorted((stack, backend, page) for stack in layout.STACKS for backend in layout.BACKENDS
               for page in layout.pages_dir(backend, stack, BOOK).glob("*.ipynb"))


def _stdout_lines(page) -> list[str]:
    cells = json.loads(page.read_text())["cells"]
    text = "".join("".join(out.get("text", "")) for cell in cells if cell["cell_type"] == "code"
                   for out in cell.get("outputs", []) if out.get("name") == "stdout")
    return [line.strip() for line in text.splitlines()]


def _printed_findings(page) -> list[str]:
    """The lines of a page's printed output that have a finding's shape ('…× … (… ms at batch …) — …')."""
    return [line for line in _stdout_lines(page)
            if "× " in line and (" ms at batch " in line or " items/s at batch " in line) and " — " in line]


def _printed_leads(page) -> list[str]:
    """best()'s sentences on a page ('fastest: …× the runner-up …' or '… within noise of each other'), from 'fastest'."""
    return [line[line.index("fastest"):] for line in _stdout_lines(page)
            if ("fastest: " in line or "fastest by latency: " in line) and "×" in line]


@pytest.mark.parametrize("stack,backend,page", PAGES, ids=[f"{s}-{b}-{p.stem}" for s, b, p in PAGES])
def test_every_printed_finding_is_what_the_rows_of_that_run_give(stack, backend, page):
    source = "".join("".join(c["source"]) for c in json.loads(page.read_text())["cells"])
    printed = _printed_findings(page)
    if "findings.say(" not in source and "findings.findings(" not in source:
        pytest.skip(f"{page.name} prints no findings")
    rows = [r for r in results.latest_runs(results.load_file(layout.rows_file(backend, stack, BOOK)))
            if r["notebook"] == page.stem]
    pairs = [(a, b, latency) for a in rows for b in rows if a is not b for latency in (False, True)]
    computed = {str(f) for f in findings.findings(rows)}  # each row against its group's baseline
    computed |= {str(findings.compare(a, b, latency=latency)) for a, b, latency in pairs}  # any pair a page compares
    assert printed, f"{page.name} uses vitlab.findings but printed no finding"
    assert not set(printed) - computed, f"printed but not what the rows give: {sorted(set(printed) - computed)[:3]}"
    leads = {findings.lead(a, b, latency=latency) for a, b, latency in pairs
             if findings.compare(a, b, latency=latency).ratio is not None}
    assert not set(_printed_leads(page)) - leads, \
        f"best() printed but not what the rows give: {sorted(set(_printed_leads(page)) - leads)[:3]}"


def test_above_ceiling_names_only_rows_faster_than_their_measured_ceiling():
    rows = [_row("OpenVINO fp32", 2.0, ceiling_fraction=1.054, ceiling_basis="measured: 407 GFLOP/s", spread=0.02),
            _row("ONNX Runtime fp32", 2.3, ceiling_fraction=0.91, ceiling_basis="measured: 407 GFLOP/s"),
            {**_row("IPEX int8", 1.0), "skipped": "no IPEX", "ceiling_fraction": None}]
    said = findings.above_ceiling(rows)
    assert said == ["OpenVINO fp32 at batch 1: 105% of the measured ceiling (measured: 407 GFLOP/s): the machine ran "
                    "this row faster than any GEMM call of the ceiling; its round spread is 2%"]
    assert findings.above_ceiling(rows[1:]) == []
