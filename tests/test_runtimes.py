import importlib.util

import pytest
import torch
import torch._dynamo
import torch.nn.functional as F
from torch._dynamo.utils import counters

from vitlab import runtimes
from vitlab.optimize import FrozenCompiled


class Block(torch.nn.Module):
    """A tiny attention block: linear projections around scaled-dot-product attention (2 heads)."""

    def __init__(self, width=32, tokens=8):
        super().__init__()
        self.embed, self.qkv, self.out = torch.nn.Linear(12, width), torch.nn.Linear(width, 3 * width), torch.nn.Linear(width, 10)
        self.tokens = tokens

    def forward(self, x):
        h = self.embed(x.reshape(len(x), self.tokens, -1))
        q, k, v = self.qkv(h).reshape(len(x), self.tokens, 3, 2, -1).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(len(x), self.tokens, -1)
        return self.out(F.layer_norm(a + h, a.shape[-1:])).mean(1)


def test_dynamic_frozen_compile_serves_batch_one_and_others_from_one_graph():
    torch._dynamo.reset()
    counters.clear()
    block = Block().eval()
    compiled = FrozenCompiled(block, dynamic=True)
    for batch in (1, 3, 1, 5):  # without the unbacked mark, batch 1 would get its own specialised graph
        x = torch.randn(batch, 8, 12)
        torch.testing.assert_close(compiled(x), block(x).detach(), atol=1e-5, rtol=1e-5)
    assert counters["stats"]["unique_graphs"] == 1
    torch._dynamo.reset()


def test_dynamic_frozen_compile_leaves_the_callers_tensor_unmarked():
    # Variants are timed on one shared input: a mark left on it would turn later static compiles symbolic.
    torch._dynamo.reset()
    counters.clear()
    block, x = Block().eval(), torch.randn(3, 8, 12)
    FrozenCompiled(block, dynamic=True)(x)
    static = FrozenCompiled(block)
    static(x)
    static(torch.randn(5, 8, 12))
    assert not hasattr(x, "_dynamo_unbacked_indices")
    assert counters["stats"]["unique_graphs"] == 3  # one symbolic graph, then one static graph per batch size
    torch._dynamo.reset()


def test_static_frozen_compile_compiles_each_batch_size():
    torch._dynamo.reset()
    counters.clear()
    compiled = FrozenCompiled(Block().eval())
    for batch in (1, 3):
        compiled(torch.randn(batch, 8, 12))
    assert counters["stats"]["unique_graphs"] == 2
    torch._dynamo.reset()


@pytest.mark.parametrize("name, group", [
    ("aten::addmm", "linear layers"), ("mkldnn::_linear_pointwise", "linear layers"), ("mkl::_mkl_linear", "linear layers"),
    ("onednn::qlinear_pointwise", "linear layers"), ("aten::mkldnn_convolution", "linear layers"), ("aten::mm", "linear layers"),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", "attention"), ("aten::bmm", "attention"),
    ("aten::_softmax", "attention"), ("aten::native_layer_norm", "everything else"), ("aten::gelu", "everything else"),
    ("## Call CompiledFxGraph abc ##", "everything else")])
def test_torch_operators_fall_into_their_group(name, group):
    assert runtimes.torch_group(name) == group


def test_torch_profile_splits_a_forward_pass_into_the_groups():
    block = Block().eval()
    with torch.no_grad():
        split = runtimes.torch_op_ms(block, torch.randn(4, 8, 12), iters=2)
    assert list(split) == list(runtimes.OP_GROUPS)
    assert split["linear layers"] > 0 and split["attention"] > 0 and split["everything else"] > 0


@pytest.mark.skipif(importlib.util.find_spec("openvino") is None, reason="openvino is not installed")
def test_openvino_counters_split_a_forward_pass_into_the_groups():
    import openvino as ov
    block, x = Block().eval(), torch.randn(4, 8, 12)
    model = ov.convert_model(block, example_input=x)
    compiled = ov.Core().compile_model(model, "CPU", {"PERF_COUNT": True, "INFERENCE_PRECISION_HINT": "f32"})
    split = runtimes.openvino_op_ms(compiled, x, iters=2)
    assert list(split) == list(runtimes.OP_GROUPS)
    assert split["linear layers"] > 0 and sum(split.values()) > split["linear layers"]
    with pytest.raises(RuntimeError):  # no counters without PERF_COUNT: the helper refuses rather than report zeros
        runtimes.openvino_op_ms(ov.Core().compile_model(model, "CPU"), x)


def test_gap_split_names_the_group_that_loses_most():
    slower = {"linear layers": 700.0, "attention": 450.0, "everything else": 60.0}
    faster = {"linear layers": 650.0, "attention": 120.0, "everything else": 90.0}
    group, diff, share = runtimes.gap_split(slower, faster)
    assert group == "attention" and diff == pytest.approx(330.0) and share == pytest.approx(330 / 350)


def test_fastest_picks_by_each_rows_own_speed_and_leaves_the_verdict_to_the_leader():
    slow = {"variant": "eager", "batch": 1, "median_ms": 10.0, "throughput": 100.0, "judged_by": "latency"}
    quick = {"variant": "compiled", "batch": 1, "median_ms": 8.0, "throughput": 125.0, "judged_by": "latency"}
    assert runtimes.fastest([slow, None, quick])["variant"] == "compiled"
    # judged by throughput (e.g. instances summed): the higher items per second wins, not the shorter call
    busy = {**slow, "variant": "two instances", "median_ms": 12.0, "throughput": 160.0, "judged_by": "throughput"}
    calm = {**quick, "judged_by": "throughput"}
    assert runtimes.fastest([calm, busy])["variant"] == "two instances"
    skipped = {"variant": "ipex", "batch": 1, "skipped": "no IPEX"}
    assert runtimes.fastest([None, skipped]) is skipped


def test_failed_rows_say_why_for_every_variant():
    rows = runtimes.failed("export failed: x", {"ONNX Runtime fp32": "fp32", "ONNX Runtime int8": "int8"},
                           runtime="ONNX Runtime")
    assert [(v.name, v.failed, v.fields["precision"]) for v in rows] == [
        ("ONNX Runtime fp32", "export failed: x", "fp32"), ("ONNX Runtime int8", "export failed: x", "int8")]


def test_counts_read_as_text_not_as_a_dict():
    counts = {"Convolution u8": 1, "FullyConnected i8": 6}
    assert runtimes.counts_text(counts) == "Convolution u8: 1, FullyConnected i8: 6"
    assert runtimes.counts_text({}) == "none"


def _timed(name: str, rounds: list[float], session: str = "s") -> dict:
    return {"variant": name, "batch": 1, "median_ms": sorted(rounds)[len(rounds) // 2], "judged_by": "latency",
            "round_medians_ms": rounds, "timing_session": session}


def test_the_counterpart_is_called_the_fastest_only_when_the_rule_tells_it_from_the_runner_up():
    from vitlab.contract.findings import leader
    eager = _timed("eager", [10.0, 10.2, 9.9, 10.1, 10.0, 10.1])
    compiled = _timed("compiled", [8.0, 8.1, 7.9, 8.0, 8.1, 8.0])
    decided = runtimes.counterpart_said(leader([eager, compiled]))
    assert decided.startswith("compiled, the fastest of them (faster than the runner-up eager: 1.25×")
    twin = _timed("dynamic", [8.0, 8.3, 7.7, 8.2, 7.8, 8.0])
    tie = runtimes.counterpart_said(leader([eager, compiled, twin]))
    assert "fastest of them" not in tie and ", the best-placed of a tie rather than the fastest: it and " in tie
    assert "were not told apart (within noise: " in tie and "says nothing of compiled" in tie
    assert runtimes.counterpart_said(leader([eager])) == "eager, the only one of them timed"
    assert runtimes.counterpart_said(leader([])) == "no PyTorch row: none was timed"


class _Found:  # what gap_said and profile_note read of a Finding
    def __init__(self, verdict, ratio):
        self.verdict, self.ratio = verdict, ratio


def test_a_profiled_gap_reads_as_a_sentence_with_three_significant_figures():
    pytorch = {"linear layers": 0.8312, "attention": 0.2374, "everything else": 0.8757}
    openvino = {"linear layers": 0.9147, "attention": 0.033, "everything else": 0.1373}
    said = runtimes.gap_said("fp32, batch 1", pytorch, openvino, _Found("faster", 1.8))
    assert said == ("fp32, batch 1: PyTorch lost the most in the ops outside the linear layers and attention "
                    "(0.876 ms against OpenVINO's 0.137 ms per profiled call, 86% of the profiled difference)")
    assert runtimes.profile_note(pytorch, openvino, _Found("faster", 1.8)) == ""
    said = [runtimes.ms_text(ms) for ms in (1234.5, 99.97, 12.345, 1.8, 0.033)]
    assert said == ["1,234", "100", "12.3", "1.80", "0.0330"]


def test_profile_totals_against_the_timed_verdict_are_said_not_left_silent():
    pytorch = {"linear layers": 0.7241, "attention": 0.09867, "everything else": 0.9809}
    openvino = {"linear layers": 3.068, "attention": 0.089, "everything else": 0.315}  # profiled: OpenVINO slower
    timed = _Found("faster", 2.83)  # timed: OpenVINO faster
    said = runtimes.gap_said("bf16, batch 1", pytorch, openvino, timed)
    assert said.startswith("bf16, batch 1: PyTorch lost the most in the ops outside the linear layers and attention "
                           "(0.981 ms against OpenVINO's 0.315 ms per profiled call)")
    assert said.endswith("though the profile's totals (PyTorch 1.80 ms, OpenVINO 3.47 ms) disagree with the timing, "
                         "where OpenVINO was faster (2.83×): a profiled call is not a timed one, so read the split, "
                         "not the totals")
    assert runtimes.profile_note(pytorch, openvino, timed).startswith("the profile's totals disagree with the timing")
    behind = runtimes.gap_said("x", openvino, {g: 2 * v for g, v in openvino.items()})  # PyTorch ahead everywhere
    assert behind == "x: PyTorch lost time to OpenVINO in none of the profile's groups"


def test_a_runtime_that_is_not_installed_says_so_and_one_that_breaks_on_import_says_why(tmp_path, monkeypatch):
    assert runtimes.load_runtime("json")[1] is None
    module, why = runtimes.load_runtime("vitlab_no_such_runtime")
    assert module is None and why.startswith("vitlab_no_such_runtime is not installed here (")
    (tmp_path / "vitlab_broken_runtime.py").write_text("raise ImportError('built for another torch')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module, why = runtimes.load_runtime("vitlab_broken_runtime")
    assert module is None and why == "vitlab_broken_runtime unavailable: ImportError: built for another torch"


def test_images_changed_counts_images_and_says_them_as_a_sentence():
    fp32 = {"accuracy": 0.90, "top1_agreement": 1.0}
    assert runtimes.images_changed(fp32, fp32, 100) == {"changed": 0, "net": 0, "verdict": "the reference"}
    same = runtimes.images_changed({"accuracy": 0.90, "top1_agreement": 0.97}, fp32, 100)
    assert runtimes.images_said(same) == "got as many right as eager fp32 (3 answers changed)"
    one = runtimes.images_changed({"accuracy": 0.91, "top1_agreement": 0.99}, fp32, 100)
    assert one["verdict"] == "tie" and "1 more right than eager fp32: a tie" in runtimes.images_said(one)
    lost = runtimes.images_changed({"accuracy": 0.87, "top1_agreement": 0.95}, fp32, 100)
    assert runtimes.images_said(lost) == "lost 3 correct answers against eager fp32 (5 answers changed)"
    assert runtimes.images_said({"net": None, "changed": 2, "verdict": None}) == "was not scored"
