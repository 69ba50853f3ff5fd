import torch
import torch._dynamo
from torch._dynamo.utils import counters

from vitlab import optimize
from vitlab.contract import findings


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


# --- chapter 02's summary sentences (rows in, phrases out; nothing compiled) -------------------------------------

CPU_GRAPHS = "not engaged (Inductor skipped them 1x: they need a CUDA/ROCm device; this is cpu)"


def mode_row(mode: str, ms: float, *, eager: bool = False, engaged: bool = True, **fields) -> dict:
    rounds = [ms * (1 + 0.004 * (i % 3 - 1)) for i in range(8)]
    return {"variant": f"mode={mode}, dtype=bf16", "label": f"{mode} bf16", "mode": mode, "dtype": "bf16",
            "batch": 1, "group": "bf16", "sweep": False, "baseline": eager, "judged_by": "latency", "median_ms": ms,
            "round_medians_ms": rounds, "timing_session": "s", "status": "ok" if engaged else "not engaged",
            "reason": fields.pop("reason", "0 graph break(s)"), **fields}


def summary(speeds: dict[str, float], **rows):
    eager = mode_row("eager", 100.0, eager=True)
    modes = [rows.get(m) or mode_row(m, ms) for m, ms in speeds.items()]
    found = [findings.compare(r, eager) for r in modes]
    return found, findings.leader([dict(f.row, variant=f.row["mode"]) for f in found])


def test_the_cuda_graph_and_autotune_phrases_are_those_the_reason_is_made_of():
    assert optimize.graphs_detail(1, "cpu") == "Inductor skipped them 1x: they need a CUDA/ROCm device; this is cpu"
    assert optimize.graphs_detail(0, "xpu") == "they need a CUDA/ROCm device; this is xpu"
    assert optimize.graphs_detail(0, "cuda") is None and optimize.graphs_detail(0, None) is None
    assert optimize.autotune_why(0, "cpu").startswith(" (on CPU") and optimize.autotune_why(3, "cpu") == ""
    ro = mode_row("reduce-overhead", 90, engaged=False, cudagraph_skips=1, autotuned_ops=0)
    ma = mode_row("max-autotune", 90, engaged=False, cudagraph_skips=1, autotuned_ops=0)
    first = optimize.extras_said(ro, "cpu")
    assert first["graphs"] == CPU_GRAPHS
    second = optimize.extras_said(ma, "cpu", after=first)
    assert second == {"graphs": "not engaged either",
                      "autotuned": "0 op(s) (on CPU Inductor autotunes GEMMs only with freezing=True)"}
    on_gpu = optimize.extras_said(dict(ma, cudagraph_skips=0, autotuned_ops=12), "cuda")
    assert on_gpu == {"graphs": "engaged", "autotuned": "12 op(s)"}
    assert optimize.extras_said({"mode": "max-autotune", "status": "failed"}, "cpu")["graphs"].startswith("not rec")


def test_a_mode_said_alone_keeps_its_verdict_and_drops_only_the_feature_note():
    eager = mode_row("eager", 100.0, eager=True)
    ro = mode_row("reduce-overhead", 90.0, engaged=False, reason="CUDA graphs not engaged (x); 0 graph break(s)")
    finding = findings.compare(ro, eager)
    assert finding.said().endswith("its feature did not engage — why: CUDA graphs not engaged (x); 0 graph break(s)")
    assert optimize.said_alone(finding) == finding.said().split("; its feature")[0]
    assert optimize.said_alone(finding).startswith("faster than eager bf16 in latency (1.11×")


def test_a_tie_singles_out_no_mode_and_counts_the_verdicts_against_eager():
    found, top = summary({"default": 90.0, "reduce-overhead": 89.5, "max-autotune": 100.2})
    assert not top.decided
    said = optimize.modes_against_eager(found, top)
    assert said == ("Against eager bf16 in latency, of the 3 compiled modes, 2 (default, reduce-overhead) were "
                    "faster and 1 (max-autotune) was within noise of it")
    assert "fastest" not in said
    assert optimize.mode_said(found[1], top) == optimize.said_alone(found[1])
    found, top = summary({"default": 90.0, "reduce-overhead": 89.5})
    assert optimize.modes_against_eager(found, top) == ("Against eager bf16 in latency, all 2 compiled modes "
                                                        "(default, reduce-overhead) were faster")


def test_a_decided_leader_is_named_with_its_finding_once():
    ma = mode_row("max-autotune", 70.0, engaged=False, reason="0 op(s) autotuned (on CPU ...)")
    found, top = summary({"default": 90.0, "max-autotune": 70.0}, **{"max-autotune": ma})
    assert top.decided
    said = optimize.modes_against_eager(found, top, said_elsewhere=("max-autotune",))
    assert said.startswith("The fastest mode, max-autotune, was faster than eager bf16 in latency (1.43×")
    assert "did not engage" not in said  # the page's max-autotune sentence says it
    assert optimize.modes_against_eager(found, top).endswith("; its feature did not engage (0 op(s) autotuned "
                                                             "(on CPU ...))")
    assert optimize.mode_said(found[1], top) == "the fastest, as said above"
    assert optimize.mode_said(found[0], top) == optimize.said_alone(found[0])


def test_a_sweep_variant_is_labelled_with_its_batch_and_keeps_its_name():
    model, x = torch.nn.Linear(4, 4).eval(), torch.randn(8, 4)
    [plain] = optimize.mode_variants(("eager",), model, x, "cpu", "bf16")
    [swept] = optimize.mode_variants(("eager",), model, x, "cpu", "bf16", batch=8)
    assert plain.name == swept.name == "mode=eager, dtype=bf16"
    assert (plain.fields["label"], swept.fields["label"]) == ("eager bf16", "eager bf16 at batch 8")
