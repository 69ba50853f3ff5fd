import torch
import torch._dynamo
from torch._dynamo.utils import counters

from vitlab import optimize


def test_eager_mode_is_returned_unchanged():
    model = torch.nn.Linear(4, 4)
    applied = optimize.compile_model(model, "eager")
    assert applied.model is model and not applied.engaged


def test_reduce_overhead_on_cpu_reports_cuda_graphs_not_engaged():
    # The real counter, not a mock: Inductor must still count its CUDA-graph skips on this torch.
    torch._dynamo.reset()
    counters.clear()
    model = optimize.compile_model(torch.nn.Linear(4, 4).eval(), "reduce-overhead").model
    with torch.no_grad():
        model(torch.randn(2, 4))
    engaged, reason = optimize.compile_report("reduce-overhead", "cpu")
    assert counters["inductor"]["cudagraph_skips"] >= 1
    assert not engaged and "not engaged" in reason and "this is cpu" in reason
    assert reason.endswith("0 graph break(s)")


def test_report_counts_graph_breaks_and_never_claims_graphs_off_cuda(monkeypatch):
    counters.clear()
    counters["graph_break"]["print"] += 2
    assert optimize.compile_report("default") == (True, "2 graph break(s)")
    engaged, reason = optimize.compile_report("max-autotune", "xpu")  # no skip counted, still no CUDA graphs
    assert not engaged and "this is xpu" in reason
    assert optimize.compile_report("max-autotune", "cuda") == (True, "CUDA graphs engaged; 2 graph break(s)")
    counters.clear()
