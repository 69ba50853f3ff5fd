"""The INT8 recipes of the IPEX chapter (ipex_int8, pt2e_int8) on a tiny conv + linear model."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from vitlab import ipex, optimize
from vitlab.machine import versions


def tiny_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 4, stride=4), nn.Flatten(), nn.Linear(8 * 4 * 4, 32), nn.ReLU(),
                         nn.Linear(32, 10)).eval()


# int8 kernels against fp32 math, on the tiny model's logits: without VNNI (AVX2-only CPUs), u8 x s8 products are
# summed in pairs into 16 bits, which can saturate: the error is larger (0.052 and 0.054 seen on a Zen 3)
INT8_TOLERANCE = 0.05 if getattr(torch.cpu, "_is_vnni_supported", lambda: True)() else 0.1


def batches(n=3, size=4):
    generator = torch.Generator().manual_seed(1)
    return [torch.randn(size, 3, 16, 16, generator=generator) for _ in range(n)]


def test_pt2e_int8_quantizes_and_keeps_the_batch_dynamic():
    model, calibration = tiny_model(), batches()
    applied = optimize.pt2e_int8(model, calibration[0][:1], calibration, compile=False)
    assert applied.engaged, applied.reason
    assert applied.details["qdq_nodes"] > 0 and f"{applied.details['qdq_nodes']} quantize" in applied.reason
    assert applied.details["source"].split(" ")[0] in ("torchao.quantization.pt2e", "torch.ao.quantization")
    with torch.no_grad():
        for x in (calibration[0], calibration[0][:1]):  # exported with batch 2, runs at 4 and 1
            assert (applied.model(x) - model(x)).abs().max() < 0.05


def test_pt2e_int8_through_torch_ao_names_its_source_or_says_it_is_gone():
    applied = optimize.pt2e_int8(tiny_model(), batches()[0], batches(), compile=False, prefer="torch.ao")
    try:
        import torch.ao.quantization.quantize_pt2e  # noqa: F401  (torch <= 2.9; moved to torchao since)
    except ImportError:
        assert not applied.engaged and "torch.ao.quantization.quantize_pt2e" in applied.reason
    else:
        assert applied.engaged and applied.details["source"].startswith("torch.ao.quantization")


def test_pt2e_int8_with_nothing_to_quantize_is_not_engaged():
    model = nn.Sequential(nn.LayerNorm(16)).eval()  # the x86 quantizer leaves LayerNorm in fp32
    applied = optimize.pt2e_int8(model, torch.randn(2, 16), [torch.randn(2, 16)], compile=False)
    assert not applied.engaged and applied.details["qdq_nodes"] == 0 and "annotated nothing" in applied.reason


def test_pt2e_int8_rejects_an_unknown_source():
    with pytest.raises(ValueError, match="choose auto, torchao or torch.ao"):
        optimize.pt2e_int8(tiny_model(), batches()[0], batches(), prefer="tensorrt")


def test_count_qdq_is_zero_on_a_float_graph():
    assert optimize.count_qdq(torch.fx.symbolic_trace(tiny_model())) == 0


def test_pt2e_int8_compiled_matches_the_reference_int8_graph():
    model, calibration = tiny_model(), batches()
    applied = optimize.pt2e_int8(model, calibration[0], calibration)
    assert applied.engaged and isinstance(applied.model, optimize.FrozenCompiled)
    x = calibration[1]
    reference = applied.details["quantized"](x)
    assert (applied.model(x) - reference).abs().max() < INT8_TOLERANCE  # oneDNN int8 kernels vs fp32 q/dq math


def test_ipex_int8_without_ipex_returns_the_model_and_why(monkeypatch):
    monkeypatch.setattr(optimize.ipex_guard, "load", lambda: None)
    monkeypatch.setattr(optimize.ipex_guard, "status", lambda: "IPEX unavailable: test")
    model = tiny_model()
    applied = optimize.ipex_int8(model, batches(), batches()[0])
    assert applied.model is model and not applied.engaged and applied.reason == "IPEX unavailable: test"


@pytest.mark.skipif(ipex.check(versions()) is not None, reason=str(ipex.check(versions())))
def test_ipex_int8_traces_freezes_and_saves_its_qconf(tmp_path):
    # In a subprocess: importing IPEX re-registers CPU kernels (layer_norm's autograd among them),
    # which must not leak into the other tests of this process.
    code = f"""
import json, torch
from vitlab import ipex, optimize
from tests.test_optimize import batches, tiny_model
if not ipex.available():
    print("SKIP", ipex.status()); raise SystemExit
model, calibration = tiny_model(), batches()
applied = optimize.ipex_int8(model, calibration, calibration[0], qconf_path={str(tmp_path / "qconf.json")!r})
with torch.no_grad():
    diff = float((applied.model(calibration[1]) - model(calibration[1])).abs().max())
print(json.dumps(dict(engaged=applied.engaged, reason=applied.reason, qdq=applied.details.get("qdq_nodes", 0),
                      script=isinstance(applied.model, torch.jit.ScriptModule), diff=diff)))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                            cwd=Path(__file__).parent.parent)
    assert result.returncode == 0, result.stderr[-2000:]
    last = result.stdout.strip().splitlines()[-1]
    if last.startswith("SKIP"):  # versions fit but the import failed: say why
        pytest.skip(last)
    out = json.loads(last)
    assert out["engaged"], out["reason"]
    assert out["script"] and out["qdq"] > 0 and out["diff"] < INT8_TOLERANCE
    assert json.loads((tmp_path / "qconf.json").read_text())  # IPEX's tuned observer settings


class _FakeIpex:
    """ipex.optimize as IPEX behaves on a CPU without AVX512BW/VL/DQ: bf16 weight prepacking refused."""

    def __init__(self, refusal: BaseException):
        self.refusal, self.calls = refusal, []

    def optimize(self, model, **args):
        self.calls.append(args)
        if args.get("weights_prepack", True):
            raise self.refusal
        return (model, args["optimizer"]) if "optimizer" in args else model


@pytest.mark.parametrize("refusal", [
    AssertionError("BF16 weight prepack needs the cpu support avx512bw, avx512vl and avx512dq, "
                   "please set dtype to torch.float or set weights_prepack to False."),
    RuntimeError("weights_prepack is not supported for bf16 on this CPU"),
])
def test_ipex_optimize_retries_without_weight_prepacking_when_ipex_refuses_it(monkeypatch, refusal):
    fake = _FakeIpex(refusal)
    monkeypatch.setattr(optimize.ipex_guard, "load", lambda: fake)
    model = tiny_model()
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    applied = optimize.ipex_optimize(model, sgd, dtype=torch.bfloat16)
    assert applied.engaged and applied.model is model and applied.optimizer is sgd
    assert fake.calls == [{"dtype": torch.bfloat16, "optimizer": sgd},
                          {"dtype": torch.bfloat16, "optimizer": sgd, "weights_prepack": False}]
    assert "weight prepacking refused" in applied.reason


def test_ipex_optimize_does_not_retry_other_failures(monkeypatch):
    fake = _FakeIpex(RuntimeError("oneDNN: unsupported layout\nmore detail"))
    monkeypatch.setattr(optimize.ipex_guard, "load", lambda: fake)
    model = tiny_model()
    applied = optimize.ipex_optimize(model)
    assert not applied.engaged and applied.model is model and len(fake.calls) == 1
    assert applied.reason == "ipex.optimize failed: RuntimeError: oneDNN: unsupported layout"
