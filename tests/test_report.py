"""The results page: what it says comes from the rows' fields, and only like is compared with like."""
import subprocess
import sys

import pytest

from vitlab.book import report
from vitlab.contract.findings import MIN_ROUNDS, THRESHOLD, compare


def _row(variant, throughput, *, stack_torch="2.8.0", model="m", batch=8, spread=0.02, **fields):
    ms = 1000 * batch / throughput if throughput else None
    wobble = (0, 1, -1, 1, 0, -1, 1, 0) if len(variant) % 2 else (1, 0, -1, 0, 1, -1, 0, 1)  # rounds that differ
    return {"backend": "cpu", "notebook": "01_n", "model": model, "batch": batch, "variant": variant,
            "preset": "full", "throughput": throughput, "median_ms": ms,
            "round_medians_ms": [ms * (1 + spread * w / 2) for w in wobble] if ms else None,
            "timing_session": stack_torch, "spread": spread, "run_id": "r", "time": "1",
            "versions": {"torch": stack_torch}, "baseline": variant == "eager", "sweep": False, "group": None,
            "engaged": True, "reason": "", **fields}


def _current(variant, throughput, **fields):
    return _row(variant, throughput, stack_torch="2.14.1", **fields)


def test_a_variant_is_compared_across_stacks_only_when_it_was_made_the_same_way():
    reference = [_row("eager", 10.0), _row("int8 static", 20.0, method="eager torch.ao", precision="int8"),
                 _row("compiled", 15.0), _row("bf16", 12.0, precision="bf16"), _row("untimed", None)]
    current = [_current("eager", 12.0), _current("int8 static", 40.0, method="PT2E + compile", precision="int8"),
               _current("compiled", 30.0, method="torch.compile"),    # recorded on one side only: not the same
               _current("bf16", 24.0, precision="bf16"), _current("untimed", None)]
    pairs = report.stack_pairs(reference, current)
    assert [(ours["variant"], theirs["variant"]) for ours, theirs in pairs] == [("eager", "eager"), ("bf16", "bf16")]
    ours, theirs = pairs[1]
    found = report.own_findings(report.page_rows(reference, current))
    assert found[("reference", report.method_key(ours))].ratio == pytest.approx(1.2, rel=0.02)  # each vs its own eager
    assert found[("current", report.method_key(theirs))].ratio == pytest.approx(2.0, rel=0.02)
    same = [_current("int8 static", 40.0, method="eager torch.ao", precision="int8"), _current("eager", 12.0)]
    assert [o["variant"] for o, _ in report.stack_pairs(reference, same)] == ["eager", "int8 static"]


def test_the_stack_section_says_how_each_pair_came_out_and_folds_the_pairs(tmp_path):
    reference = [_row("eager", 10.0), _row("compiled", 20.0), _row("ipex", 30.0)]
    current = [_current("eager", 10.1), _current("compiled", 30.0)]
    page = report.write_results_page(reference, tmp_path, current).read_text()
    section = page.split("## Reference stack vs current stack")[1]
    # 2 compared: compiled faster, eager within noise; compiled faster on both stacks: the verdicts agree
    assert "| cpu | 01_n | 2 | 1 | 0 | 1 | 0 | 1 | 0 | 0 |" in section
    assert "```{dropdown} All 2 variants both stacks ran" in section
    assert "| cpu | 01_n | m | compiled | 8 | not recorded | torch 2.8.0, full | 20.00 | faster |" in section
    assert "| faster | same | throughput | 1.50×, 95% interval 1.49–1.51× over 8 unpaired rounds | faster |" in (
        section)
    assert "| ipex |" not in section
    flipped = [_current("eager", 10.0), _current("compiled", 5.0)]
    section = report.write_results_page(reference, tmp_path, flipped).read_text().split("vs current stack")[1]
    assert "| slower | opposite | throughput | 0.25×, 95% interval" in section and "| 0 | 0 | 1 |" in section
    empty = report.write_results_page(reference, tmp_path, []).read_text()
    assert "No variant has been run the same way on both stacks yet" in empty


def test_what_each_run_showed_is_said_from_the_rows_and_flips_with_them(tmp_path):
    rows = [_row("eager", 10.0), _row("compiled", 20.0), _row("bf16", 10.2),
            _row("graphs", 30.0, engaged=False, reason="no CUDA graphs here"),  # fastest, but not what it names
            _row("ipex", None, skipped="IPEX unavailable"), _row("trace", None, status="failed", reason="TypeError")]
    page = report.write_results_page(rows, tmp_path).read_text()
    summary = page.split("## What each run showed")[1].split("## ")[0]
    assert ("faster than their baselines: **compiled** (m, batch 8): 2.00× eager (95% interval 1.98–2.02×); of 5 "
            "variants against a baseline: 1 faster, 1 within noise, 1 not engaged (judged anyway: 1 faster), 1 skipped, "
            "1 failed.") in summary
    idle = [_row("eager", 10.0), _row("graphs", 30.0, engaged=False, reason="no CUDA graphs here")]
    summary = report.write_results_page(idle, tmp_path).read_text().split("## What each run showed")[1]
    assert ("no variant with its feature engaged beat its baseline under the rule; of 1 variant against a "
            "baseline: 1 not engaged (judged anyway: 1 faster).") in summary
    slower = [_row("eager", 10.0), _row("compiled", 5.0, spread=0.3)]
    summary = report.write_results_page(slower, tmp_path).read_text().split("## What each run showed")[1]
    assert "no variant beat its baseline under the rule; of 1 variant against a baseline: 1 slower." in summary


def test_the_summary_links_a_chapter_only_where_its_page_exists(tmp_path):
    rows = [_row("eager", 10.0), _row("compiled", 20.0)]
    assert "- 01_n — faster than" in report.write_results_page(rows, tmp_path).read_text()
    (tmp_path / "current" / "cpu").mkdir(parents=True)
    (tmp_path / "current" / "cpu" / "01_n.ipynb").write_text("{}")
    page = report.write_results_page([], tmp_path, rows).read_text()
    assert "- [](current/cpu/01_n.ipynb) — faster than" in page  # Sphinx writes in the page's title


def test_legacy_rows_get_their_status_and_new_fields_get_columns(tmp_path):
    legacy = [_row("eager", 10.0), _row("graphs", 10.0, engaged=False), _row("ipex", None, skipped="no IPEX")]
    page = report.write_results_page(legacy, tmp_path).read_text()
    assert "| cpu | m | graphs | 8 |" in page and "| not engaged |" in page and "| skipped | no IPEX |" in page
    assert "| precision |" not in page
    typed = [_row("eager", 10.0, precision="fp32", status="ok"), _row("int8", 30.0, precision="int8", method="PT2E",
                                                                        status="ok", ceiling_fraction=0.5)]
    page = report.write_results_page(typed, tmp_path).read_text()
    assert "| status | precision | method | note |" in page
    assert "| cpu | m | int8 | 8 | 266.67 | – | 30.00 | throughput | 3.00×, 95% interval" in page
    assert "over 8 paired rounds | faster | 50% |" in page


def test_provenance_is_folded_and_no_label_is_joined_to_be_split_again(tmp_path):
    rows = [_row("eager", 10.0, device_name="AMD EPYC"), _row("compiled", 20.0)]
    page = report.write_results_page(rows, tmp_path, [_current("eager", 9.0)]).read_text()
    provenance = page.split("## Where the numbers come from")[1].split("## ")[0]
    assert "```{dropdown} Machine, versions, preset and commit of every run" in provenance
    assert "| cpu (current stack) | 01_n | full |" in provenance
    assert " · " not in page


def test_a_figure_per_chapter_keeps_methods_apart_and_stale_figures_go(tmp_path):
    figures = tmp_path / "figures"
    figures.mkdir()
    (figures / "ceiling_fraction.png").write_bytes(b"old")
    rows = [_row("eager", 10.0), _row("int8", 20.0, method="eager torch.ao")]
    current = [_current("eager", 10.0), _current("int8", 30.0, method="PT2E")]
    page = report.write_results_page(rows, tmp_path, current).read_text()
    assert ("```{image} figures/01_n_speedup.png\n:alt: Dot plot of 01_n's comparisons, one panel per comparison "
            "(m, batch 8): each variant's speed over its baseline (on throughput) on a log scale with a line at 1×, "
            "one marker per run (cpu, cpu (current stack)) with whiskers for its 95% interval\n```") in page
    assert sorted(p.name for p in figures.iterdir()) == ["01_n_speedup.png"]
    shown = report.page_rows(rows, current)
    panel = report.panels(shown)[("m", 8, None)]
    assert list(panel) == [("int8", "eager torch.ao", None, None, None), ("int8", "PT2E", None, None, None)]
    assert report.entry_labels(list(panel)) == ["int8 (eager torch.ao)", "int8 (PT2E)"]


def test_no_figure_panel_holds_more_than_eight_runs(tmp_path, monkeypatch):
    runs = [{**row, "backend": f"b{i}"} for i in range(10) for row in (_row("eager", 10.0), _row("fast", 20.0))]
    seen = []
    monkeypatch.setattr(report, "speedup_figure", lambda rows, path, colours: seen.append(
        {report.run_of(r) for r in rows}) or True)
    page = report.write_results_page(runs, tmp_path).read_text()
    assert [len(s) for s in seen] == [8, 2]
    assert "figures/01_n_speedup.png" in page and "figures/01_n_speedup_2.png" in page


def test_the_page_is_written_without_torch(tmp_path):
    code = ("import sys; sys.modules['torch'] = None\n"
            "from pathlib import Path\n"
            "from vitlab.book import report\n"
            "rows = [{'backend': 'cpu', 'notebook': 'n', 'model': 'm', 'batch': 1, 'variant': v, 'throughput': t,\n"
            "         'baseline': v == 'eager', 'run_id': 'r', 'time': '1', 'versions': {}} for v, t in\n"
            "        (('eager', 2.0), ('fast', 4.0))]\n"
            f"print(report.write_results_page(rows, Path({str(tmp_path)!r})).name)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["results.md"]
    assert (tmp_path / "figures" / "n_speedup.png").exists()


def test_rows_of_one_model_and_batch_in_different_comparisons_never_read_alike(tmp_path):
    def chapter(make):  # the same model, variants and batch three times: the mode rows, a batch sweep, a fresh process
        return [make("eager", 10.0), make("compiled", 20.0), make("eager", 10.0, sweep=True),
                make("compiled", 10.0, sweep=True), make("eager", 10.0, group="without IPEX"),
                make("compiled", 12.0, group="without IPEX")]
    page = report.write_results_page(chapter(_row), tmp_path, chapter(_current)).read_text()
    rows_table = page.split("All 12 rows of 01_n")[1].split("```")[0].splitlines()[3:]
    pairs_table = page.split("All 6 variants both stacks ran")[1].split("```")[0].splitlines()[3:]
    for lines, cells in ((rows_table, 4), (pairs_table, 5)):
        names = [tuple(line.split(" | ")[:cells]) for line in lines]
        assert len(names) == len(set(names)) == {4: 12, 5: 6}[cells]
    assert "| cpu | m | compiled (sweep) | 8 |" in page and "| cpu | m | eager (without IPEX) ◆ | 8 |" in page
    assert "| cpu | 01_n | m | compiled (without IPEX) | 8 |" in page and "| cpu | 01_n | m | compiled | 8 |" in page
    assert "**compiled (without IPEX)** (m, batch 8): 1.20× eager" in page  # the summary names the group too
    assert report.row_label({"variant": "training run fp32", "group": "training run"}) == "training run fp32"


def test_the_ratio_beside_a_verdict_is_the_findings_not_a_ratio_of_medians(tmp_path):
    eager = _row("eager", 10.0)
    # the overall medians say 2×, the paired rounds 1.6×: the verdict is judged on the rounds, so the page says 1.6×
    fast = _row("compiled", 20.0, round_medians_ms=[m / 1.6 * (1 + 0.01 * (-1) ** i)
                                                     for i, m in enumerate(eager["round_medians_ms"])])
    page = report.write_results_page([eager, fast], tmp_path, [_current("eager", 10.0), _current("compiled", 30.0)])
    page = page.read_text()
    found = report.own_findings(report.page_rows([eager, fast]))[("reference", report.method_key(fast))]
    assert found.ratio == pytest.approx(1.6, rel=1e-3) and found.verdict == "faster"
    assert f"| 20.00 | throughput | {found.evidence()} | faster |" in page and "| 2.00 |" not in page
    across = compare(_current("compiled", 30.0), report.page_rows([eager, fast])[1])
    assert f"| throughput | {across.evidence()} | {across.verdict} |" in page


def test_the_rules_numbers_on_the_page_are_the_rules_constants_and_the_rows_rounds(monkeypatch):
    long = {"round_medians_ms": [800 * (1 + 0.01 * (i % 3 - 1)) for i in range(30)]}
    rows = report.page_rows([_row("eager", 10.0), _row("compiled", 20.0), _row("eager", 10.0, model="m2", **long),
                             _row("compiled", 10.0, model="m2", **long)])
    text = " ".join(report.rule_section(rows))
    assert "the comparisons on this page have 8 to 30 rounds" in text
    assert f"above {1 + THRESHOLD:.2f}×" in text
    assert f"below 1/{1 + THRESHOLD:.2f} ≈ {1 / (1 + THRESHOLD):.3f}×" in text
    assert f"fewer than {MIN_ROUNDS} rounds" in text and "0.95×" not in text
    monkeypatch.setattr(report, "THRESHOLD", 0.10)
    monkeypatch.setattr(report, "MIN_ROUNDS", 7)
    text = " ".join(report.rule_section(rows))
    assert "threshold is ±10%" in text and "below 1/1.10 ≈ 0.909×" in text and "fewer than 7 rounds" in text


def test_a_run_tells_apart_differences_beyond_the_threshold_plus_its_median_half_width(tmp_path):
    base = _row("eager", 10.0)

    def at(ratio):  # a variant `ratio` times as fast in every round, give or take the same wobble
        wobble = (1.03, 0.98, 1.01, 0.97, 1.02, 0.99, 1.0, 1.0)
        return _row("fast", 10.0 * ratio,
                    round_medians_ms=[m / ratio / w for m, w in zip(base["round_medians_ms"], wobble)])
    h = compare(at(1.0), base).band
    edge = (1 + THRESHOLD) * (1 + h)  # what the page says: told apart beyond about this
    assert compare(at(edge * 1.01), base).verdict == "faster"
    assert compare(at(edge / 1.01), base).verdict == "inconclusive"
    page = report.write_results_page([base, at(1.3)], tmp_path).read_text()
    section = page.split("## What size of difference each run could tell apart")[1].split("## ")[0]
    assert f"| 01_n | cpu | 1 | ±{h:.0%} | ±{h:.0%} | ±{edge - 1:.0%} |" in section


def test_figures_say_what_their_ratios_are_ratios_of(tmp_path):
    latency = [_row("eager", 10.0, batch=1, judged_by="latency"), _row("compiled", 20.0, batch=1, judged_by="latency")]
    page = report.write_results_page(latency, tmp_path).read_text()
    assert "each variant's speed over its baseline (on latency) on a log scale" in page and "throughput of" not in page
    mixed = latency + [_row("eager", 10.0), _row("compiled", 20.0)]  # batch 8: judged on throughput
    page = report.write_results_page(mixed, tmp_path).read_text()
    assert "over its baseline (on latency or throughput, as each comparison is judged) on a log scale" in page
    titles = {report.panel_title(key, entries) for key, entries in report.panels(report.page_rows(mixed)).items()}
    assert titles == {"m, batch 1 — against eager, on latency", "m, batch 8 — against eager, on throughput"}


def test_each_figure_is_described_in_its_alt_text_not_named_by_its_path(tmp_path):
    runs = [{**row, "backend": f"b{i}"} for i in range(10) for row in (_row("eager", 10.0), _row("fast", 20.0))]
    runs += [_row("eager", 10.0, batch=1), _row("not engaged", 20.0, batch=1, engaged=False)]
    page = report.write_results_page(runs, tmp_path).read_text()
    alts = [line.removeprefix(":alt: ") for line in page.splitlines() if line.startswith(":alt: ")]
    images = [line for line in page.splitlines() if line.startswith("```{image} ")]
    assert len(alts) == len(images) == 2 and "![" not in page  # one per MAX_SERIES runs, each with its own text
    first, second = alts
    assert "one marker per run (b0, b1, b2, b3, b4, b5, b6, b7)" in first and "(m, batch 8)" in first
    assert "hollow" not in first
    assert "one marker per run (b8, b9, cpu)" in second and "(m, batch 8; m, batch 1)" in second
    assert "a hollow marker: not engaged" in second  # as the figure's legend says, where one is drawn
    assert not any(".png" in alt or "figures/" in alt for alt in alts)


def test_a_note_shows_as_written_not_as_markdown(tmp_path):
    why = "AttributeError: __torch__.torch.classes.quantized.X has no field *obj* [see `y`]"
    rows = [_row("eager", 10.0), _row("saving", None, status="failed", failed=why)]
    page = report.write_results_page(rows, tmp_path).read_text()
    assert r"\_\_torch\_\_.torch.classes.quantized.X has no field \*obj\* \[see \`y\`\]" in page
    assert "| __torch__" not in page


def test_the_summary_names_rows_by_the_label_their_chapter_says():
    base = _row("serve fp32 1x2", 10.0, label="fp32 in 1 instance of 2 cores", baseline=True)
    other = _row("serve fp32 2x1", 20.0, label="fp32 in 2 instances of 1 core")
    said = report.finding_sentence(compare(other, base))
    assert said.startswith("**fp32 in 2 instances of 1 core** (m, batch 8): 2.00× fp32 in 1 instance of 2 cores (")
    assert "serve fp32" not in said


def _two_runs(second_ratio, jitter=0.01):
    """One comparison (eager vs compile, 8 paired rounds) in two runs: 2.0× in the first, `second_ratio` in the
    second."""
    from vitlab.book import repeat
    def run(ratio, session):
        rows = []
        for variant, ms in (("eager", 100.0), ("compile", 100.0 / ratio)):
            rounds = [ms * (1 + jitter * ((k * 7 + len(variant)) % 3 - 1)) for k in range(8)]
            rows.append(_row(variant, 1000 / ms, round_medians_ms=rounds, timing_session=session, batch=1))
        return rows
    return repeat.pairs(run(2.0, "a"), run(second_ratio, "b"))


def test_two_runs_that_agree_within_their_intervals_need_no_run_to_run_allowance():
    from vitlab.book import repeat
    matched = _two_runs(2.0)
    assert repeat.moved(*matched[0]) < 1.96
    assert repeat.run_to_run(matched) == 0.0
    assert repeat.calibration(matched)["all"] == {"compared": 1, "beyond": 0, "run_to_run": 0.0}


def test_two_runs_ten_percent_apart_with_narrow_intervals_show_the_spread_their_intervals_missed():
    from vitlab.book import repeat
    matched = _two_runs(2.2, jitter=0.002)
    assert repeat.moved(*matched[0]) > 1.96
    found = repeat.calibration(matched)
    assert found["01_n"]["beyond"] == found["all"]["beyond"] == 1
    # log(1.1) apart, each run offset by s with 2 s^2 = log(1.1)^2 less the tiny interval terms: ±1.96 s ≈ ±14%
    assert 0.12 < found["all"]["run_to_run"] < 0.15


def test_the_results_page_shows_how_often_two_runs_lay_further_apart_than_their_intervals(tmp_path):
    import json
    from vitlab.book import repeat
    from vitlab.contract import layout
    matched = _two_runs(2.2, jitter=0.002)
    said = repeat.summary(matched, [m[0].row for m in matched])
    folder = layout.rows_dir("reference", tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "repeatability.json").write_text(json.dumps(said))
    page = report.write_results_page([r for pair in matched for r in (pair[0].row, pair[0].baseline)],
                                     tmp_path).read_text()
    assert "1 of 1 did" in page
    assert "| 01_n | 1 | 1 | ±14% |" in page
    said.pop("calibration")  # a tally saved before the calibration was kept: no table, no claim
    (folder / "repeatability.json").write_text(json.dumps(said))
    assert "further apart than the two intervals allow" not in report.write_results_page([], tmp_path).read_text()


def test_the_tally_tells_a_change_between_two_non_calls_from_a_call_that_came_and_went(tmp_path):
    import json
    from vitlab.book import repeat
    from vitlab.contract import layout
    wide = _two_runs(1.03, jitter=0.2)  # run A: 1.03x from rounds 20% apart: inconclusive
    tight = _two_runs(2.0)
    tight[0][1].row.update(round_medians_ms=tight[0][1].baseline["round_medians_ms"])  # run B: a tie, within noise
    matched = repeat.pairs([wide[0][1].row, wide[0][1].baseline], [tight[0][1].row, tight[0][1].baseline])
    verdicts = [(a.verdict, b.verdict) for a, b in matched]
    assert verdicts == [("inconclusive", "within noise")]
    said = repeat.summary(matched, [matched[0][0].row])
    assert said["tally"] == {"one undecided": 1} and said["neither_a_call"] == 1
    assert "1 changed, 1 of them between within noise and inconclusive" in repeat.lines(matched, said)[len(matched)]
    folder = layout.rows_dir("reference", tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "repeatability.json").write_text(json.dumps(said))
    page = report.write_results_page([matched[0][0].row, matched[0][0].baseline], tmp_path).read_text()
    assert "0 between a call and no call, 1 between within noise and inconclusive" in page


def test_a_re_timed_baseline_is_tallied_apart_from_the_comparisons(tmp_path):
    import json
    from vitlab.book import repeat
    from vitlab.contract import layout

    def run(control_off: float, session: str):
        base = _row("eager", 100.0, batch=1, timing_session=session)
        compiled = _row("compile", 200.0, batch=1, timing_session=session)
        control = _row("eager (re-timed)", 100.0 * control_off, batch=1, timing_session=session, control=True)
        control["round_medians_ms"] = [m / control_off for m in base["round_medians_ms"]]
        return [base, compiled, control]
    matched = repeat.pairs(run(1.0, "a"), run(1.3, "b"))  # run B's machine moved 30% between the two copies
    said = repeat.summary(matched, [matched[0][0].row])
    assert said["compared"] == 1 and said["tally"] == {"same": 1}  # compile vs eager: same verdict twice
    assert said["controls"] == {"compared": 1, "same": 0, "drifted": 1}
    assert any(line.startswith("The 1 re-timed baselines (controls") for line in repeat.lines(matched, said))
    folder = layout.rows_dir("reference", tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "repeatability.json").write_text(json.dumps(said))
    page = report.write_results_page([r for a, _ in matched for r in (a.row, a.baseline)], tmp_path).read_text()
    assert "The 1 re-timed baselines (controls" in page and "0 said the same in both runs, and 1 drifted" in page


def test_the_results_page_shows_every_machine_s_tally_under_one_heading(tmp_path):
    import json
    from vitlab.book import repeat
    from vitlab.contract import layout
    matched = _two_runs(2.2, jitter=0.002)
    folder = layout.rows_dir("reference", tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    for name, machine in (("repeatability.json", "machine one"), ("repeatability-two.json", "machine two")):
        said = repeat.summary(matched, [m[0].row for m in matched])
        (folder / name).write_text(json.dumps({**said, "machine": machine}))
    page = report.write_results_page([r for pair in matched for r in (pair[0].row, pair[0].baseline)],
                                     tmp_path).read_text()
    assert page.count("## Verdicts that held when the book was run twice") == 1
    assert page.index("run twice on machine one (") < page.index("run twice on machine two (")
    assert page.count("1 of 1 did") == 2
