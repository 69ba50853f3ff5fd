import pytest
import torch

from vitlab.workers import ddp

TINY = ["--steps", "1", "--warmup", "1", "--batch", "8", "--backend", "cpu"]


def test_backend_per_device():
    assert [ddp.process_group_backend(d) for d in ("cpu", "cuda:1", "xpu")] == ["gloo", "nccl", "xccl"]
    with pytest.raises(ValueError, match="no distributed backend for 'mps'"):
        ddp.process_group_backend("mps")


def test_parameter_hash_sees_one_changed_weight():
    model = torch.nn.Linear(4, 2)
    before = ddp.parameter_hash(model)
    assert ddp.parameter_hash(model) == before
    with torch.no_grad():
        model.bias[0] += 1e-6
    assert ddp.parameter_hash(model) != before


def test_two_ranks_end_with_identical_parameters():
    run = ddp.launch(2, TINY, threads=1, timeout=150)
    assert run.ok, run.failure() + "\n" + run.output[-2000:]
    summary = run.summary
    assert summary["world_size"] == 2 and summary["process_group"] == "gloo"
    assert summary["parameters identical across ranks"] is True
    first, second = summary["ranks"]
    assert first["first_batch_labels"] != second["first_batch_labels"]  # each rank read its own shard
    assert first["parameter_hash"] == second["parameter_hash"]


@pytest.fixture(scope="module")
def killed_rank():
    """A launch whose rank 1 dies at step 1, run once for the tests below."""
    return ddp.launch(2, TINY + ["--fail-rank", "1", "--fail-step", "1", "--timeout", "30"], threads=1, timeout=150)


def test_a_killed_rank_fails_the_launch(killed_rank):
    run = killed_rank
    assert not run.timed_out and run.returncode not in (0, None)  # noticed, not waited out until the kill at 150 s
    assert run.summary is None
    assert "rank 1 failed first" in run.failure()


@pytest.mark.timing
def test_a_killed_rank_fails_the_launch_within_90_s(killed_rank):
    assert killed_rank.wall_s < 90


# torchrun's (torch.distributed.elastic) report of a failed launch, as it prints it; abridged.
TORCHRUN_ROOT_CAUSE = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "vitlab/workers/ddp.py", line 131, in fail
[rank1]: RuntimeError: rank 1 was told to fail at step 1
E1201 11:40:02.123000 4242 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 1) local_rank: 1
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
vitlab.workers.ddp FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-01_11:40:02
  host      : box
  rank      : 1 (local_rank: 1)
  exitcode  : {code} (pid: 4243)
  error_file: <N/A>
  traceback : {traceback}
============================================================
"""


def _failed(output: str, returncode: int = 1, **kw) -> ddp.Launch:
    return ddp.Launch(["torchrun"], returncode, 12.34, output, None, **kw)


def test_failure_names_the_root_cause_rank_and_what_it_raised():
    output = TORCHRUN_ROOT_CAUSE.format(code=1, traceback="To enable traceback see: https://pytorch.org/docs/")
    assert _failed(output).failure() == ("DDP launch failed in 12.3 s with exit code 1: rank 1 failed first (exit code 1); "
                                         "rank 1 raised RuntimeError: rank 1 was told to fail at step 1")


def test_failure_of_a_rank_killed_by_a_signal_names_the_signal():
    output = TORCHRUN_ROOT_CAUSE.format(code=-9, traceback="Signal 9 (SIGKILL) received by PID 4243")
    assert _failed(output, -9).failure().startswith(
        "DDP launch failed in 12.3 s with exit code -9: rank 1 failed first (exit code -9), Signal 9 (SIGKILL) received")


def test_failure_without_a_root_cause_quotes_the_last_line_and_a_timeout_says_so():
    assert _failed("starting\nERROR: address already in use\n").failure() == \
        "DDP launch failed in 12.3 s with exit code 1: ERROR: address already in use"
    assert _failed("", returncode=None, timed_out=True).failure() == \
        "DDP launch killed after 12 s (timeout): a rank hung"
    assert ddp.Launch(["torchrun"], 0, 1.0, "", {"world_size": 2}).failure() == ""


def test_window_spread_is_the_range_of_window_medians_over_their_median():
    steady = [0.1] * 9
    assert ddp.window_spread(steady) == 0.0
    slow_end = [0.1] * 6 + [0.15] * 3  # windows' medians 0.1, 0.1, 0.15
    assert ddp.window_spread(slow_end) == 0.5
    assert ddp.window_spread([0.1, 0.1]) is None  # fewer steps than windows: no band


def test_window_rates_give_the_verdicts_rounds_and_ranks_add_up_window_by_window():
    from vitlab.workers.ddp import summed_windows, window_rates
    steps = [0.1] * 6 + [0.2] * 6  # a run that slowed down halfway
    assert window_rates(steps, batch=10, windows=4) == [100.0, 100.0, 50.0, 50.0]
    assert window_rates(steps[:3], batch=10, windows=4) is None  # fewer steps than windows
    assert summed_windows([[100.0, 50.0], [90.0, 40.0]]) == [190.0, 90.0]
    assert summed_windows([[100.0, 50.0], None]) is None


def test_a_ddp_run_is_named_in_words_by_its_layout():
    assert [ddp.label(1, 1, cores=2), ddp.label(2, 1, cores=2), ddp.label(1, 2, cores=2)] == [
        "one rank of 1 thread", "two ranks of 1 thread each", "one process using both cores"]
    assert ddp.label(2, 4, cores=8) == "two ranks of 4 threads each"
    assert ddp.label(1, 8, cores=8) == "one process using all 8 cores"
    assert ddp.label(1, 1, cores=1) == "one rank of 1 thread"  # one core: not "all 1 cores"
    assert [ddp.label(2, 1, "cuda"), ddp.label(1, 1, "xpu")] == ["two ranks on two cuda devices",
                                                               "one rank on one xpu device"]


def _done(rates: list[float], ranks: int, threads: int) -> ddp.Launch:
    """A launch that succeeded, its summary as rank 0 prints it (no torchrun)."""
    summary = {"ranks": [{"threads": threads}] * ranks, "process_group": "gloo", "spread": 0.01,
               "images_per_s": sum(rates) / len(rates), "window_images_per_s": rates}
    return ddp.Launch(["torchrun"], 0, 1.0, "", summary)


def test_a_ddp_sentence_names_the_runs_it_compares_by_their_labels_not_their_variant_ids():
    """Chapter 04's DDP rows as it records them: the glued sentence says 'one rank of 1 thread', never the id."""
    from vitlab.contract import findings
    runs = {"1 rank, same threads": (_done([950, 955, 948, 952, 951, 949], 1, 1), 1, 1),
            "2 ranks": (_done([1530, 1525, 1534, 1528, 1531, 1529], 2, 1), 2, 1),
            "1 process, all cores": (_done([1350, 1356, 1352, 1349, 1355, 1351], 1, 2), 1, 2)}
    rows = [{"model": "vit-32px", "variant": f"ddp {name}", "batch": 64, "group": "ddp",
             "baseline": name == "1 rank, same threads", "label": ddp.label(ranks, threads, cores=2),
             **launch.row_fields()} for name, (launch, ranks, threads) in runs.items()]
    found = {f.row["variant"]: f for f in findings.findings(rows, group="ddp")}
    said = found["ddp 2 ranks"].said()
    assert said.startswith("faster than one rank of 1 thread (") and "ddp " not in said
    against_all = findings.compare(rows[1], rows[2]).said()
    assert against_all.startswith("faster than one process using both cores (") and "ddp " not in against_all
