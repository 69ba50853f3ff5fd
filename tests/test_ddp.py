import pytest
import torch

from vitlab import ddp

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
    assert summary["world_size"] == 2 and summary["backend"] == "gloo"
    assert summary["parameters identical across ranks"] is True
    first, second = summary["ranks"]
    assert first["first_batch_labels"] != second["first_batch_labels"]  # each rank read its own shard
    assert first["parameter_hash"] == second["parameter_hash"]


def test_a_killed_rank_fails_the_launch_fast():
    run = ddp.launch(2, TINY + ["--fail-rank", "1", "--fail-step", "1", "--timeout", "30"], threads=1, timeout=150)
    assert not run.timed_out and run.returncode not in (0, None)
    assert run.summary is None
    assert run.wall_s < 90
    assert "rank 1 failed first" in run.failure()


def test_window_spread_is_the_range_of_window_medians_over_their_median():
    steady = [0.1] * 9
    assert ddp.window_spread(steady) == 0.0
    slow_end = [0.1] * 6 + [0.15] * 3  # windows' medians 0.1, 0.1, 0.15
    assert ddp.window_spread(slow_end) == 0.5
    assert ddp.window_spread([0.1, 0.1]) is None  # fewer steps than windows: no band
