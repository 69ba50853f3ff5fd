import pytest
import torch

from vitlab import device, machine


def test_auto_picks_an_available_backend():
    assert device.pick_device("auto").type == device.available_backends()[0]
    assert device.available_backends()[-1] == "cpu"


def test_cpu_is_always_there():
    assert device.pick_device("CPU") == torch.device("cpu")


def test_unknown_backend_names_the_choices():
    with pytest.raises(device.BackendError, match=r"unknown backend 'tpu'.*auto, cpu, cuda, xpu, mps, rocm"):
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
    info = machine.describe("cpu")
    assert info["cpu_isa"] == torch.backends.cpu.get_cpu_capability()
    assert info["threads"] == torch.get_num_threads()
    assert info["memory_gb"] > 0
    assert torch.__version__.startswith(info["versions"]["torch"])


def test_peak_is_a_number_with_its_basis_or_says_unknown():
    peak, basis = machine.peak_flops("cpu")
    if peak is None:
        assert basis.startswith("unknown")
    else:
        # threads x FLOP/cycle x clock: between 1 and 1000 GFLOP/s per thread for any real CPU
        assert 1e9 < peak / torch.get_num_threads() < 1e12
        assert "FLOP/cycle" in basis
    bf16, basis = machine.peak_flops("cpu", torch.bfloat16)
    assert (bf16 is None) == ("avx512_bf16" not in machine.cpu_flags() or "amx_bf16" in machine.cpu_flags()
                              or peak is None)
    assert machine.peak_flops("cpu", torch.float16)[0] is None


@pytest.mark.parametrize("flags, family, expected", [
    ({"avx512f", "avx512_bf16"}, 25, 2 * 2 * 8 * 2),        # Zen 4: 256-bit datapaths, twice the fp32 rate
    ({"avx512f", "avx512_bf16"}, None, 2 * 2 * 16 * 2),     # an AVX-512 core with 2 full-width FMA units
    ({"avx512f"}, 25, None),                                 # no bf16 dot product: converted to fp32
    ({"avx512f", "avx512_bf16", "amx_bf16"}, None, None),    # AMX: not modelled
])
def test_cpu_bf16_peak_is_twice_fp32_only_with_avx512_bf16(monkeypatch, flags, family, expected):
    monkeypatch.setattr(machine, "cpu_flags", lambda: flags)
    monkeypatch.setattr(machine, "_amd_family", lambda: family)
    monkeypatch.setattr(machine, "_cpu_ghz", lambda: 2.0)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    peak, basis = machine.peak_flops("cpu", torch.bfloat16)
    if expected is None:
        assert peak is None and basis.startswith("unknown for bf16")
    else:
        threads = torch.get_num_threads()
        assert peak == pytest.approx(threads * expected * 2.0e9)
        assert f"{expected} bf16 FLOP/cycle" in basis and "VDPBF16PS" in basis
        assert peak == pytest.approx(2 * machine.peak_flops("cpu", torch.float32)[0])


@pytest.mark.parametrize("where, waits_on", [
    ("cpu", []), ("cuda:1", [("cuda", "cuda:1")]), ("xpu", [("xpu", "xpu")]), ("mps", [("mps", None)]),
])
def test_synchronize_waits_on_the_device_it_is_given_and_never_on_the_cpu(monkeypatch, where, waits_on):
    calls = []
    for kind in ("cuda", "xpu"):
        monkeypatch.setattr(getattr(torch, kind), "synchronize", lambda d=None, kind=kind: calls.append((kind, str(d))))
    monkeypatch.setattr(torch.mps, "synchronize", lambda: calls.append(("mps", None)))
    device.synchronize(where)
    assert calls == waits_on


@pytest.mark.parametrize("name, entry", [
    ("NVIDIA H200", "H200"), ("NVIDIA H200 NVL", "H200 NVL"), ("NVIDIA L40S", "L40S"), ("NVIDIA L4", "L4"),
    ("Tesla T4", "T4"), ("NVIDIA GeForce RTX 4090", None), ("AMD Instinct MI210", "MI210"),
])
def test_gpu_datasheet_matches_whole_names_longest_first(name, entry):
    found = machine.gpu_datasheet(name)
    assert (found[0] if found else None) == entry


def test_one_cpuinfo_reader_gives_name_and_flags():
    info = machine.cpuinfo()
    if not info:
        pytest.skip("no /proc/cpuinfo here")
    assert machine.cpu_name() == info["model name"]
    assert ("avx2" in machine.cpu_flags()) == (torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512"))


def test_cpu_bf16_is_native_only_with_bf16_dot_product_instructions():
    flags = machine.cpu_flags()
    if not flags:
        pytest.skip("no /proc/cpuinfo here")
    # oneDNN runs bf16 on any AVX-512 CPU (converted to fp32): that is not native
    assert device.supports_bf16("cpu") == bool({"avx512_bf16", "amx_bf16"} & flags)


@pytest.mark.parametrize("flags, family, halves", [
    ({"avx512f"}, 25, True),     # Zen 4
    ({"avx512f"}, 26, False),    # Zen 5: full 512-bit datapaths
    ({"avx2"}, 25, False),       # Zen 3: no AVX-512 at all
    ({"avx512f"}, None, False),  # Intel
])
def test_avx512_on_256bit_halves_only_on_zen4(monkeypatch, flags, family, halves):
    monkeypatch.setattr(machine, "cpu_flags", lambda: flags)
    monkeypatch.setattr(machine, "_amd_family", lambda: family)
    assert machine.avx512_on_256bit_halves() is halves


def test_each_backend_record_names_what_vitlab_looks_up():
    import torch

    from vitlab.contract.layout import BACKENDS, DEVICE_TYPES, ON_DEVICE
    assert set(ON_DEVICE) == set(DEVICE_TYPES) and ON_DEVICE["cuda"].name == "cuda"
    for b in BACKENDS.values():
        assert b.synchronize is None or callable(getattr(getattr(torch, b.synchronize), "synchronize"))
        assert b.bf16_probe in ("cpu-isa", "device-module", "always", "never")
        assert b.peak_source in ("cpu-isa", "datasheet", None)
    same = ("device_type", "process_group", "synchronize", "bf16_probe", "peak_source")
    assert [getattr(BACKENDS["rocm"], f) for f in same] == [getattr(BACKENDS["cuda"], f) for f in same]
    device.synchronize("cpu")  # no module: nothing to wait for
    assert machine.peak_flops("meta")[0] is None  # a device type no backend runs on: unknown, no error


def test_a_page_title_names_a_gpu_without_its_vendors_prefix():
    from vitlab.contract.gpus import short_name
    assert short_name("NVIDIA H200") == "H200" and short_name("AMD Instinct MI300X") == "AMD Instinct MI300X"
    assert machine.gpu_datasheet("NVIDIA H200")[0] == "H200"  # the data-sheet table lives beside it, re-exported
