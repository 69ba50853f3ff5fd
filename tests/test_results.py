import json
import multiprocessing
import os

import pytest
import torch

from vitlab import results, timing
from vitlab.contract import findings


def _row(variant="eager", **kw):
    t = timing.Timing([2.0, 4.0, 3.0], first_call_s=1.5, warmup=1)
    return results.make_row("02_torch_compile", "cpu", "quick", "vit-ti16", variant, 4, timing=t, **kw)


def test_row_has_the_design_schema():
    row = _row(correct={"max_abs_diff": 0.0, "top1_agreement": 1.0}, engaged=False, reason="why")
    for key in ("notebook", "backend", "device_name", "preset", "model", "variant", "batch", "median_ms",
                "p90_ms", "throughput", "compile_s", "max_abs_diff", "top1_agreement", "engaged", "reason",
                "versions", "cpu_isa", "threads", "git_sha", "time", "run_id"):
        assert key in row, key
    assert (row["median_ms"], row["first_call_s"], row["throughput"]) == (3.0, 1.5, pytest.approx(4000 / 3, rel=1e-3))
    assert row["compile_s"] is None  # a first call is not a compile unless the caller says so
    assert row["versions"]["torch"] and row["backend"] == "cpu" and row["engaged"] is False


def test_correctness_against_reference():
    ref = torch.tensor([[0.0, 1.0], [2.0, 0.0]])
    c = results.correctness(ref + torch.tensor([[0.5, 0.0], [0.0, 3.0]]), ref)
    assert c == {"max_abs_diff": 3.0, "top1_agreement": 0.5}


def test_append_only_and_load_across_backends(tmp_path):
    results.append(_row("a"), tmp_path / "cpu.jsonl")
    results.append(_row("b"), tmp_path / "cpu.jsonl")
    results.append({**_row("c"), "backend": "cuda"}, tmp_path / "cuda.jsonl")
    rows = results.load(tmp_path)
    assert [r["variant"] for r in rows] == ["a", "b", "c"]
    assert len((tmp_path / "cpu.jsonl").read_text().splitlines()) == 2


def test_a_torn_line_loses_nothing_else(tmp_path):
    path = tmp_path / "cpu.jsonl"
    results.append(_row("before"), path)
    with open(path, "a") as f:  # a writer killed mid-line
        f.write(json.dumps(_row("torn"))[:40])
    results.append(_row("after"), path)
    assert [r["variant"] for r in results.load(tmp_path)] == ["before", "after"]


def _write_then_die(path):
    results.append(_row("complete"), path)
    os._exit(1)  # a crash right after a write


def test_a_crashing_writer_leaves_complete_rows(tmp_path):
    path = tmp_path / "cpu.jsonl"
    results.append(_row("earlier"), path)
    proc = multiprocessing.get_context("spawn").Process(target=_write_then_die, args=(path,))
    proc.start()
    proc.join(60)
    assert proc.exitcode == 1
    assert [r["variant"] for r in results.load(tmp_path)] == ["earlier", "complete"]


def test_the_recorder_puts_its_context_on_every_row(tmp_path):
    rec = results.Recorder("nb", "cpu", "quick", tmp_path / "rows.jsonl", run_id="run-1", git_sha="abc")
    t = timing.Timing([2.0, 2.0], None, 0)
    rec.record("m", "eager", 1, timing=t, baseline=True)
    rec.record("m", "fast", 1, timing=timing.Timing([1.0, 1.0], None, 0), spread=0.03)
    rec.record("m", "eager", 8, timing=t, baseline=True, sweep=True)
    rec.record("m", "ipex", 1, skipped="IPEX unavailable: torch 2.14 is not 2.8")
    rec.record("m", "graphs", 1, engaged=False, reason="no CUDA device", timing=t)
    rec.record("m", "int8", 1, failed="RuntimeError: no int8 kernel")
    stored = results.load_file(tmp_path / "rows.jsonl")
    assert stored == rec.rows
    assert {(r["notebook"], r["backend"], r["preset"], r["run_id"], r["git_sha"]) for r in stored} == {
        ("nb", "cpu", "quick", "run-1", "abc")}
    assert [r["baseline"] for r in stored] == [True, False, True, False, False, False]
    assert [r["sweep"] for r in stored] == [False, False, True, False, False, False]
    assert [r["status"] for r in stored] == ["ok", "ok", "ok", "skipped", "not engaged", "failed"]
    assert stored[1]["spread"] == 0.03 and stored[0]["spread"] is None
    for untimed in (stored[3], stored[5]):
        assert untimed["median_ms"] is None and untimed["throughput"] is None and untimed["engaged"] is False
    assert stored[5]["reason"] == "RuntimeError: no int8 kernel"
    assert [r["speedup"] for r in rec.speedups(batch=1)] == [1.0, 2.0, None, 1.0, None]
    assert results.row_problems(stored) == []


def test_without_a_run_id_each_recorder_makes_its_own():
    first, second = (results.Recorder("nb", "cpu", "quick", "unused.jsonl") for _ in range(2))
    assert first.run_id != second.run_id and len(first.run_id) == 12


def test_status_of_a_row_written_before_the_field_existed():
    assert [results.status_of(r) for r in ({"skipped": "no IPEX"}, {"failed": "boom"}, {"engaged": False}, {},
                                           {"status": "failed", "engaged": True})] == [
        "skipped", "failed", "not engaged", "ok", "failed"]


def test_row_problems_names_a_group_without_its_baseline_and_an_untimed_status_with_a_timing():
    base = {"backend": "cpu", "notebook": "n", "model": "m", "batch": 1, "run_id": "new", "time": "2"}
    rows = [{**base, "variant": "eager", "baseline": True, "median_ms": 2.0},
            {**base, "variant": "ipex", "status": "skipped", "median_ms": 1.0},
            {**base, "variant": "int8", "failed": "boom", "throughput": 3.0},
            {**base, "variant": "orphan", "group": "int8", "median_ms": 1.0},
            {**base, "variant": "eager", "baseline": True, "run_id": "old", "time": "1"}]  # an older run: not read
    assert results.row_problems(rows) == ["('cpu', 'n', 'm', 1, 'int8', False): 0 baseline rows",
                                          "n: skipped row 'ipex' carries a timing",
                                          "n: failed row 'int8' carries a timing"]
    assert results.row_problems(rows[:1] + rows[4:]) == []


@pytest.mark.parametrize("reason, ours", [
    ("TypeError: argument after ** must be a mapping, not bool", True),  # chapter 03's old bug
    ("NameError: name 'bf16' is not defined", True),
    ("TypeError: ipex_int8() missing 1 required positional argument: 'example'", True),
    ("AttributeError: 'NoneType' object has no attribute 'eval'", True),
    ("TypeError: expected Tensor() for op: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward", False),
    ("RuntimeError: could not create a primitive descriptor for a matmul primitive", False)])
def test_a_failed_row_that_reads_like_our_own_bug_breaks_the_contract(reason, ours):
    base = {"backend": "cpu", "notebook": "n", "model": "m", "batch": 1, "run_id": "r", "time": "1"}
    rows = [{**base, "variant": "eager", "baseline": True, "median_ms": 2.0},
            {**base, "variant": "ipex bf16", "status": "failed", "failed": reason, "reason": reason}]
    problems = results.row_problems(rows)
    assert bool(problems) == ours and all("reads like a bug in the calling code" in p for p in problems)


def test_an_interleaved_timing_leaves_its_spread_and_round_medians_in_the_row():
    t = timing.InterleavedTiming([2.0, 4.0, 3.0], None, 1, round_medians_ms=[2.0, 4.0, 3.0])
    row = results.make_row("01_port_to_xpu", "cpu", "quick", "vit-32px", "fp32", 64, timing=t, baseline=True)
    assert row["round_medians_ms"] == [2.0, 4.0, 3.0] and row["spread"] == pytest.approx((4 - 2) / 3, abs=1e-4)
    assert "round_medians_ms" not in _row()  # a plain Timing has no rounds
    assert "host_busy" not in row  # not measured: not recorded
    t.host_busy = 0.4
    busy = results.make_row("01_port_to_xpu", "cpu", "quick", "vit-32px", "fp32", 64, timing=t, baseline=True)
    assert busy["host_busy"] == 0.4  # other programs' CPU use while it was timed: findings reads it
    assert row["run_to_run"] == findings.RUN_TO_RUN["01_port_to_xpu"]  # its chapter's measured spread, on CPU
    assert "run_to_run" not in _row()  # no rounds: nothing for a spread to widen


def test_a_skipped_or_failed_variant_cannot_carry_a_timing():
    with pytest.raises(ValueError, match="carries no timing"):
        _row(skipped="no IPEX")
    with pytest.raises(ValueError, match="carries no timing"):
        _row(failed="RuntimeError: boom")


def test_a_gpu_runs_host_sections_record_into_the_contexts_host_file(tmp_path):
    from vitlab import chapter
    from vitlab.contract.context import RunContext
    rec = results.Recorder("nb", "cpu", "quick", tmp_path / "rows.jsonl", run_id="run-1")
    context = RunContext("cuda", "cuda", host_rows=str(tmp_path / "host.jsonl"), git_sha="abc")
    run = chapter.Run("nb", "quick", {}, torch.device("cuda"), {}, rec, context)
    assert run.recorder_for("cuda:0") is rec  # the run's own device: the run's recorder
    run.recorder_for("cpu").record("m", "eager", 1, baseline=True)
    (row,) = results.load_file(tmp_path / "host.jsonl")
    assert (row["backend"], row["run_id"], row["git_sha"]) == ("cpu", "run-1", "abc")
    assert not (tmp_path / "rows.jsonl").exists()


def test_a_rows_backend_is_the_run_contexts_page_name_where_the_chapter_runs_on_its_device(tmp_path):
    from vitlab import chapter
    from vitlab.contract.context import RunContext
    rocm = RunContext("cuda", "rocm")
    assert chapter._page_name(rocm, torch.device("cuda")) == "rocm"  # a ROCm run's pages and rows say rocm
    assert chapter._page_name(rocm, torch.device("cpu")) is None  # a CPU-only chapter: the device's own name
    assert chapter._page_name(RunContext(), torch.device("cpu")) is None  # a run by hand
    rec = results.Recorder("nb", "cpu", "quick", tmp_path / "rows.jsonl", backend="rocm")
    assert rec.record("m", "eager", 1, baseline=True)["backend"] == "rocm"
