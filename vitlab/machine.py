"""What the machine is: CPU name, ISA and clock, device names, nominal peaks, package versions."""
from __future__ import annotations

import importlib.metadata
import os
import platform
from functools import lru_cache

import torch

from vitlab.contract.gpus import gpu_datasheet  # noqa: F401  (re-exported)
from vitlab.contract.layout import ON_DEVICE
from vitlab.device import available_backends, backend_name, pick_device, supports_bf16


@lru_cache(maxsize=None)
def cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo ('model name', 'flags', 'cpu MHz', ...); {} elsewhere."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break  # the end of the first processor's block
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        pass
    return fields


def cpu_name() -> str:
    """The CPU's model name (from /proc/cpuinfo, or platform on other systems)."""
    return cpuinfo().get("model name") or platform.processor() or platform.machine()


def cpu_flags() -> set[str]:
    """The CPU feature flags (empty where there is no /proc/cpuinfo)."""
    return set(cpuinfo().get("flags", "").split())


def _amd_family() -> int | None:
    """The CPU family number of an AMD CPU (25 = Zen 3/Zen 4, 26 = Zen 5), else None."""
    info = cpuinfo()
    if info.get("vendor_id") != "AuthenticAMD" or "cpu family" not in info:
        return None
    return int(info["cpu family"])


def avx512_on_256bit_halves() -> bool:
    """True on a Zen 4 (AMD family 25 with AVX-512), which runs each 512-bit instruction on two 256-bit halves, so
    its fp32 peak stays at AVX2's; Zen 5 (family 26) and Intel's AVX-512 cores have full-width datapaths."""
    return "avx512f" in cpu_flags() and _amd_family() == 25


def _cpu_ghz() -> float | None:
    """The CPU's nominal clock in GHz (max from sysfs, else /proc/cpuinfo), or None."""
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") as f:
            return int(f.read()) / 1e6
    except (OSError, ValueError):
        pass
    try:
        return float(cpuinfo()["cpu MHz"]) / 1000
    except (KeyError, ValueError):
        return None


# fp32 FLOPs per cycle per core = FMA units x SIMD lanes x 2 (multiply + add).
# Two FMA units per core holds for the x86 cores of the last decade (Intel since Haswell,
# AMD since Zen 2); one-FMA-port AVX-512 parts exist, so the basis is always printed.
_FP32_FLOPS_PER_CYCLE = {"AVX2": 2 * 8 * 2, "AVX512": 2 * 16 * 2}

def peak_flops(device: torch.device | str, dtype: torch.dtype = torch.float32) -> tuple[float | None, str]:
    """Nominal peak FLOP/s of `device` for `dtype` and how it was obtained (its backend's `peak_source`), or
    (None, why unknown)."""
    kind = torch.device(device).type
    source = ON_DEVICE[kind].peak_source if kind in ON_DEVICE else None
    if source == "cpu-isa":
        flags = cpu_flags()
        if dtype == torch.bfloat16 and ("avx512_bf16" not in flags or "amx_bf16" in flags):
            return None, ("unknown for bf16 on this CPU (AMX tiles: not modelled)" if "amx_bf16" in flags
                          else "unknown for bf16 on this CPU (no AVX512_BF16: bf16 is converted to fp32)")
        if dtype not in (torch.float32, torch.bfloat16):
            return None, f"unknown for {dtype} on CPU"
        isa = torch.backends.cpu.get_cpu_capability()
        per_cycle = _FP32_FLOPS_PER_CYCLE.get(isa)
        basis = f"{isa}, 2 FMA units"
        if isa == "AVX512" and avx512_on_256bit_halves():
            per_cycle, basis = _FP32_FLOPS_PER_CYCLE["AVX2"], "AVX512 on Zen 4: 256-bit datapaths, 2 FMA units"
        ghz = _cpu_ghz()
        if per_cycle is None or ghz is None:
            return None, f"unknown (ISA {isa}, clock {'unknown' if ghz is None else f'{ghz:.2f} GHz'})"
        threads = torch.get_num_threads()
        if dtype == torch.bfloat16:  # VDPBF16PS: each fp32 lane accumulates two bf16 products per op
            per_cycle, basis = 2 * per_cycle, f"2x fp32: AVX512_BF16 dot products (VDPBF16PS); {basis}"
        return (threads * per_cycle * ghz * 1e9,
                f"{threads} threads x {per_cycle} {'bf16' if dtype == torch.bfloat16 else 'fp32'} "
                f"FLOP/cycle ({basis}) x {ghz:.2f} GHz nominal")
    if source == "datasheet":
        name = getattr(torch, kind).get_device_name(device)
        found = gpu_datasheet(name)
        if found is None:
            return None, f"unknown (no data-sheet entry for {name})"
        key, (fp32, half) = found
        value = fp32 if dtype == torch.float32 else half
        return (value, f"{key} data sheet, dense {dtype}") if value else (None, f"unknown for {dtype}")
    return None, f"unknown for {kind}"


def device_name(device: torch.device | str) -> str:
    """A human name for the device: the GPU's product name, or the CPU's model name."""
    kind = torch.device(device).type
    if kind == "cuda":
        return torch.cuda.get_device_name(device)
    if kind == "xpu":
        return torch.xpu.get_device_name(device)
    if kind == "mps":
        return f"Apple GPU ({platform.machine()})"
    return cpu_name()


def versions() -> dict[str, str | None]:
    """Installed versions of the packages the book's numbers depend on (None if absent)."""
    names = {"torch": "torch", "ipex": "intel-extension-for-pytorch", "transformers": "transformers",
             "timm": "timm", "torchao": "torchao", "torchvision": "torchvision"}
    found = {"python": platform.python_version()}
    for key, dist in names.items():
        try:
            found[key] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            found[key] = None
    return found


def describe(device: torch.device | str | None = None) -> dict:
    """Everything a result needs to be compared: device, ISA, threads, memory, versions, peak."""
    device = pick_device("auto") if device is None else torch.device(device)
    kind = device.type
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if kind == "cuda":
        memory = torch.cuda.get_device_properties(device).total_memory
    elif kind == "xpu":
        memory = torch.xpu.get_device_properties(device).total_memory
    peak, basis = peak_flops(device)
    return {
        "backend": backend_name(device),
        "device": str(device),
        "device_name": device_name(device),
        "cpu": cpu_name(),
        "cpu_isa": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
        "memory_gb": round(memory / 2**30, 1),
        "bf16_native": supports_bf16(device),
        "peak_fp32_flops": peak,
        "peak_basis": basis,
        "torch_build": ("rocm " + torch.version.hip) if torch.version.hip else
                       ("cuda " + torch.version.cuda) if torch.version.cuda else "cpu",
        "versions": versions(),
        "available_backends": available_backends(),
    }
