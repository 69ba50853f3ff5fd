"""vitlab.workers.serve: one serving instance prints one JSON line per batch; instances meet at a barrier."""
import json
import threading

import pytest
import torch
from torch import nn

from vitlab.workers import serve


@pytest.fixture
def tiny(monkeypatch):
    """build() returns a tiny linear model instead of the trained digits ViT."""
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 10)).eval()

    def build(kind, weights=None, calibration_images=256):
        if kind == "ipex-int8":
            return None, "IPEX unavailable: test"
        return (lambda x: model(x)), f"{kind} (tiny)"
    monkeypatch.setattr(serve, "build", build)


def test_one_json_line_per_batch_with_timing_and_spread(tiny, capsys):
    lines = serve.main(["--model", "fp32", "--batch", "1", "4", "--iters", "6", "3", "--rounds", "3", "--json"])
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert printed == lines and [line["batch"] for line in lines] == [1, 4]
    assert [line["iters"] for line in lines] == [6, 3]  # split evenly over the rounds
    for line in lines:
        assert line["median_ms"] > 0 and line["p90_ms"] >= line["median_ms"] and line["spread"] >= 0
        assert line["throughput"] == pytest.approx(line["batch"] * 1000 / line["median_ms"])
        assert line["threads"] == torch.get_num_threads() and line["end"] >= line["start"]


def test_a_busy_machine_keeps_stdout_json_and_says_so_on_stderr(tiny, capsys, monkeypatch):
    from vitlab import timing
    monkeypatch.setattr(timing.HostLoad, "busy", lambda self: 4.2)  # other programs took 4.2 cores meanwhile
    lines = serve.main(["--model", "fp32", "--batch", "1", "--iters", "3", "--rounds", "3", "--json"])
    out, err = capsys.readouterr()
    assert [json.loads(line) for line in out.splitlines()] == lines and lines[0]["host_busy"] == 4.2
    assert err.startswith("note: other programs used 4.20 cores of this machine while fp32 were timed")


def test_a_recipe_that_did_not_engage_is_a_skipped_line_without_timing(tiny):
    lines = serve.main(["--model", "ipex-int8", "--batch", "1", "8"])
    assert [(line["batch"], line["skipped"]) for line in lines] == [(1, "IPEX unavailable: test"), (8, "IPEX unavailable: test")]
    assert all("median_ms" not in line for line in lines)


def test_barrier_waits_for_every_instance(tmp_path):
    arrived = []
    other = threading.Thread(target=lambda: (serve.barrier(str(tmp_path), 2, "b1"), arrived.append("other")))
    other.start()
    other.join(0.2)
    assert other.is_alive() and not arrived  # alone at the barrier (one file per pid: same pid, so fake a second)
    (tmp_path / "b1-second").touch()
    other.join(5)
    assert arrived == ["other"]
    with pytest.raises(TimeoutError):
        serve.barrier(str(tmp_path), 3, "b2", timeout_s=0.05)
    serve.barrier(None, 5, "ignored")  # no folder: no waiting


def test_several_models_in_one_instance_each_with_its_lines(tiny):
    lines = serve.main(["--model", "fp32", "ipex-int8", "pt2e-int8", "--batch", "1", "2", "--iters", "3", "--rounds", "1"])
    assert [(line["model"], line["batch"]) for line in lines] == [
        ("fp32", 1), ("fp32", 2), ("ipex-int8", 1), ("ipex-int8", 2), ("pt2e-int8", 1), ("pt2e-int8", 2)]
    assert [bool(line.get("skipped")) for line in lines] == [False, False, True, True, False, False]
    assert all(line["iters"] == 3 for line in lines if not line.get("skipped"))


def test_iters_must_be_one_count_or_one_per_batch(tiny):
    with pytest.raises(SystemExit):
        serve.main(["--batch", "1", "2", "4", "--iters", "3", "5"])


def test_each_line_is_one_write_so_instances_sharing_a_pipe_cannot_interleave(tiny, monkeypatch):
    writes = []

    class Unbuffered:  # what stdout is under PYTHONUNBUFFERED: every write() reaches the pipe at once
        def write(self, text):
            writes.append(text)
            return len(text)

        def flush(self):
            pass

    monkeypatch.setattr("sys.stdout", Unbuffered())
    lines = serve.main(["--model", "fp32", "--batch", "1", "2", "--iters", "2", "--rounds", "1", "--json"])
    assert len(writes) == len(lines) == 2
    assert all(text.endswith("\n") and text.count("\n") == 1 and len(text.encode()) < 4096 for text in writes)
    assert [json.loads(text) for text in writes] == lines


def test_a_launch_that_failed_is_a_failed_row_that_says_how_and_one_that_printed_nothing_is_skipped(tmp_path):
    from vitlab.results import Recorder
    rec = Recorder("03_test", "cpu", "quick", tmp_path / "rows.jsonl", run_id="r")
    error = "run_cpu.py: error: argument --ncores-per-instance: invalid int value: '/usr/bin/python'"
    failed = serve.record(rec, [], 1, 2, ("fp32", "pt2e-int8"), (1,), baseline=True, launcher_error=error)
    assert [(r["variant"], r["status"]) for r in failed] == [("serve fp32 1x2", "failed"), ("serve pt2e-int8 1x2", "failed")]
    assert all(error in r["reason"] and r["median_ms"] is None for r in failed)
    assert [r["precision"] for r in failed] == ["fp32", "int8"]
    quiet = serve.record(rec, [], 2, 1, ("fp32",), (1,), baseline=False)
    assert [(r["status"], r["reason"]) for r in quiet] == [("skipped", "0 of 2 instances reported")]


def test_round_fields_take_the_slowest_instance_and_sum_the_rates_round_by_round():
    lines = [{"round_medians_ms": [10.0, 20.0]}, {"round_medians_ms": [12.5, 10.0]}]
    assert serve.round_fields(lines, batch=1) == {"round_medians_ms": [12.5, 20.0],
                                                  "round_throughputs": [180.0, 150.0]}
    assert serve.round_fields([{"round_medians_ms": [1.0]}, {}], batch=1) == {}  # rounds that do not line up


def test_the_launch_command_pins_instances_with_options_given_with_equals_and_passes_the_budget():
    cmd = serve.command("w.safetensors", 2, 1, ("fp32", "pt2e-int8"), (1, 32), budget_s=1.5,
                        calibration_images=128, barrier_dir="/tmp/b", python="py")
    assert cmd[:7] == ["py", "-m", "torch.backends.xeon.run_cpu", "--use-logical-core", "--no-python",
                       "--ninstances=2", "--ncores-per-instance=1"]  # '=': torch 2.14's option takes a list
    worker = cmd[7:]
    assert worker[:3] == ["py", "-m", "vitlab.workers.serve"]
    assert worker[worker.index("--model") + 1:worker.index("--weights")] == ["fp32", "pt2e-int8"]
    assert worker[worker.index("--batch") + 1:worker.index("--budget-s")] == ["1", "32"]
    assert worker[worker.index("--budget-s") + 1] == "1.5" and "--iters" not in worker
    assert worker[-4:] == ["--barrier", "/tmp/b", "--instances", "2"] and "--accuracy" in worker


def test_launch_output_is_parsed_to_the_json_lines_and_a_failed_launch_says_its_last_error_line():
    stdout = ('2026-12-02 INFO - numactl found\n{"model": "fp32", "batch": 1}\n{"model": "fp32", "ba\n'
              '{"model": "fp32", "batch": 32}\n')
    assert serve.parse(stdout) == [{"model": "fp32", "batch": 1}, {"model": "fp32", "batch": 32}]
    assert serve.launcher_error(0, "warnings\n") == ""
    assert serve.launcher_error(2, "usage: ...\nrun_cpu.py: error: bad option\n") == "run_cpu.py: error: bad option"
    assert serve.launcher_error(-9, "") == "exit -9"


def test_a_budget_in_seconds_sizes_the_calls_but_keeps_the_rounds_fixed_so_instances_line_up(tiny):
    lines = serve.main(["--model", "fp32", "--batch", "1", "4", "--budget-s", "0.3", "--rounds", "5"])
    assert [(line["rounds"], len(line["round_medians_ms"]), line["budget_s"]) for line in lines] == [(5, 5, 0.3)] * 2
    assert all(line["iters"] >= 5 for line in lines)
    assert all(line["host_busy"] is None or line["host_busy"] >= 0 for line in lines)  # measured, where /proc is
    with pytest.raises(SystemExit):
        serve.main(["--batch", "1", "2", "4", "--budget-s", "1", "2"])


def test_record_judges_each_batch_as_the_chapter_says_and_keeps_the_budget(tmp_path):
    from vitlab.results import Recorder
    rec = Recorder("03_test", "cpu", "quick", tmp_path / "rows.jsonl", run_id="r")
    line = {"model": "fp32", "median_ms": 2.0, "p90_ms": 2.5, "iters": 50, "throughput": 500.0, "spread": 0.1,
            "reason": "eager fp32", "round_medians_ms": [2.0] * 5, "budget_s": 1.0}
    lines = [{**line, "batch": batch, "pid": pid, "host_busy": 0.1 * pid} for batch in (1, 32) for pid in (1, 2)]
    rows = serve.record(rec, lines, 2, 1, ("fp32",), (1, 32), baseline=False,
                        judged_by={1: "latency", 32: "throughput"})
    assert [(r["batch"], r["judged_by"], r["rounds"], r["budget_s"]) for r in rows] == [
        (1, "latency", 5, 1.0), (32, "throughput", 5, 1.0)]
    assert [r["host_busy"] for r in rows] == [0.2, 0.2]  # the busiest instance's view of the other programs
    assert rows[0]["label"] == "fp32 in 2 instances of 1 core"  # what a sentence calls it as a baseline
    assert serve.layout(1, 2) == "1 instance of 2 cores"
    default = serve.record(rec, lines, 2, 1, ("fp32",), (1,), baseline=False)
    assert default[0]["judged_by"] == "throughput"  # batch 1 over two instances: the row's default


def test_a_control_launch_of_the_baseline_layout_widens_every_serving_interval_by_the_drift(tmp_path):
    from vitlab.contract.findings import findings
    from vitlab.results import Recorder
    rec = Recorder("03_test", "cpu", "quick", tmp_path / "rows.jsonl", run_id="r")
    jitter = [1.0, 1.02, 0.98, 1.01, 0.99, 1.0]

    def lines(ms, pids):  # one launch's lines: every instance's rounds at `ms` with the same jitter
        return [{"model": "fp32", "batch": 32, "pid": pid, "median_ms": ms, "p90_ms": ms, "iters": 60,
                 "throughput": 32_000 / ms, "spread": 0.04, "reason": "eager fp32",
                 "round_medians_ms": [ms * j for j in jitter]} for pid in pids]
    serve.record(rec, lines(10.0, (1,)), 1, 2, ("fp32",), (32,), baseline=True)
    serve.record(rec, lines(15.0, (1, 2)), 2, 1, ("fp32",), (32,), baseline=False)  # 2 x 32/15 ms: 1.33x
    steady = {f.row["variant"]: f for f in findings(rec.rows)}["serve fp32 2x1"]
    assert steady.verdict == "faster" and steady.control is None
    control = serve.record(rec, lines(13.0, (1,)), 1, 2, ("fp32",), (32,), baseline=False, control=True)
    assert [(r["variant"], r["control"], r["baseline"]) for r in control] == [("serve fp32 1x2 (re-timed)", True,
                                                                               False)]
    moved = {f.row["variant"]: f for f in findings(rec.rows)}
    # the baseline layout itself came back 23% slower: that drift is added to the 2x1 interval's both ends
    assert moved["serve fp32 2x1"].control is not None and moved["serve fp32 2x1"].interval.drift > 0.2
    assert moved["serve fp32 2x1"].verdict == "inconclusive" and moved["serve fp32 2x1"].ratio == steady.ratio
    assert moved["serve fp32 1x2 (re-timed)"].verdict == "drifted"  # the control against the baseline: the drift
