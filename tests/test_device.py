import pytest
import torch

from vitlab import device


def test_auto_picks_an_available_backend():
    assert device.pick_device("auto").type == device.available_backends()[0]
    assert device.available_backends()[-1] == "cpu"


def test_cpu_is_always_there():
    assert device.pick_device("CPU") == torch.device("cpu")


def test_unknown_backend_names_the_choices():
    with pytest.raises(device.BackendError, match=r"unknown backend 'tpu'.*auto, cpu, cuda, xpu, mps"):
        device.pick_device("tpu")


@pytest.mark.parametrize("backend", ["cuda", "xpu", "mps"])
def test_absent_backend_names_what_is_available(backend):
    if backend in device.available_backends():
        pytest.skip(f"{backend} is present here")
    with pytest.raises(device.BackendError, match=r"not available on this machine \(available: .*cpu\)"):
        device.pick_device(backend)


def test_rocm_is_reported_when_torch_is_a_hip_build(monkeypatch):
    monkeypatch.setattr(torch.version, "hip", "6.2.0")
    assert device.backend_name("cuda") == "rocm"
    monkeypatch.setattr(torch.version, "hip", None)
    assert device.backend_name("cuda") == "cuda"


def test_describe_has_isa_threads_memory_and_versions():
    info = device.describe("cpu")
    assert info["cpu_isa"] == torch.backends.cpu.get_cpu_capability()
    assert info["threads"] == torch.get_num_threads()
    assert info["memory_gb"] > 0
    assert torch.__version__.startswith(info["versions"]["torch"])


def test_peak_is_a_number_with_its_basis_or_says_unknown():
    peak, basis = device.peak_flops("cpu")
    if peak is None:
        assert basis.startswith("unknown")
    else:
        # threads x FLOP/cycle x clock: between 1 and 1000 GFLOP/s per thread for any real CPU
        assert 1e9 < peak / torch.get_num_threads() < 1e12
        assert "FLOP/cycle" in basis
    assert device.peak_flops("cpu", torch.bfloat16)[0] is None


def test_synchronize_on_cpu_is_a_no_op():
    device.synchronize("cpu")
