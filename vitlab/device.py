"""Which backend we run on, how to wait for it, and what the machine is."""
from __future__ import annotations

import importlib.metadata
import os
import platform

import torch

BACKENDS = ("cpu", "cuda", "xpu", "mps")
CHOICES = ("auto",) + BACKENDS


class BackendError(ValueError):
    """An unknown backend, or one this machine does not have."""


def available_backends() -> list[str]:
    """The backends this machine can run, best first (ROCm shows up as cuda)."""
    found = []
    if torch.cuda.is_available():
        found.append("cuda")
    if hasattr(torch, "xpu") and torch.xpu.is_available():
        found.append("xpu")
    if torch.backends.mps.is_available():
        found.append("mps")
    return found + ["cpu"]


def pick_device(backend: str = "auto") -> torch.device:
    """A torch.device for `backend` (auto|cpu|cuda|xpu|mps); raises BackendError if unusable."""
    backend = str(backend).lower()
    if backend == "rocm":  # ROCm builds of torch drive AMD GPUs through the cuda API
        backend = "cuda"
    have = available_backends()
    if backend not in CHOICES:
        raise BackendError(f"unknown backend {backend!r}: choose one of {', '.join(CHOICES)} "
                           f"(this machine has {', '.join(have)})")
    if backend == "auto":
        backend = have[0]
    if backend not in have:
        raise BackendError(f"backend {backend!r} is not available on this machine "
                           f"(available: {', '.join(have)})")
    return torch.device(backend)


def notebook_device(backend: str = "auto") -> torch.device:
    """pick_device for notebooks: an absent backend prints one line and falls back to the best present."""
    try:
        return pick_device(backend)
    except BackendError as error:
        fallback = pick_device("auto")
        print(f"{error}; running on {fallback.type} instead")
        return fallback


def backend_name(device: torch.device | str) -> str:
    """The name a reader knows: cpu, cuda, rocm, xpu or mps."""
    kind = torch.device(device).type
    if kind == "cuda" and torch.version.hip:
        return "rocm"
    return kind


def synchronize(device: torch.device | str) -> None:
    """Wait until all queued work on `device` has finished (a no-op on CPU)."""
    kind = torch.device(device).type
    if kind == "cuda":
        torch.cuda.synchronize(device)
    elif kind == "xpu":
        torch.xpu.synchronize(device)
    elif kind == "mps":
        torch.mps.synchronize()


def supports_bf16(device: torch.device | str) -> bool:
    """True when `device` computes bf16 natively (not emulated, as on AVX2-only CPUs)."""
    kind = torch.device(device).type
    if kind == "cuda":
        return torch.cuda.is_bf16_supported()
    if kind == "xpu":
        return True
    if kind == "cpu":
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    return False


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo (or platform on other systems)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cpu_ghz() -> float | None:
    """The CPU's nominal clock in GHz (max from sysfs, else /proc/cpuinfo), or None."""
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") as f:
            return int(f.read()) / 1e6
    except (OSError, ValueError):
        pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("cpu MHz"):
                    return float(line.split(":", 1)[1]) / 1000
    except (OSError, ValueError):
        pass
    return None


def _amd_family() -> int | None:
    """The CPU family number of an AMD CPU (25 = Zen 3/Zen 4, 26 = Zen 5), else None."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read(4096)
    except OSError:
        return None
    if "AuthenticAMD" not in text:
        return None
    for line in text.splitlines():
        if line.startswith("cpu family"):
            return int(line.split(":", 1)[1])
    return None


def _cpu_flags() -> set[str]:
    """The CPU feature flags from /proc/cpuinfo (empty where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


# fp32 FLOPs per cycle per core = FMA units x SIMD lanes x 2 (multiply + add).
# Two FMA units per core holds for the x86 cores of the last decade (Intel since Haswell,
# AMD since Zen 2); one-FMA-port AVX-512 parts exist, so the basis is always printed.
_FP32_FLOPS_PER_CYCLE = {"AVX2": 2 * 8 * 2, "AVX512": 2 * 16 * 2}

# Dense fp32 / bf16 peaks (FLOP/s) from the vendors' data sheets.
_GPU_PEAKS = {
    "H200": (67e12, 989e12), "H100": (67e12, 989e12), "A100": (19.5e12, 312e12),
    "L4": (30.3e12, 121e12), "T4": (8.1e12, None), "MI210": (22.6e12, 181e12),
    "MI250": (45.3e12, 362e12), "MI300X": (163.4e12, 1307e12),
}


def peak_flops(device: torch.device | str, dtype: torch.dtype = torch.float32) -> tuple[float | None, str]:
    """Peak FLOP/s of `device` for `dtype` and how it was obtained, or (None, why unknown)."""
    kind = torch.device(device).type
    if kind == "cpu":
        flags = _cpu_flags()
        if dtype == torch.bfloat16 and ("avx512_bf16" not in flags or "amx_bf16" in flags):
            return None, ("unknown for bf16 on this CPU (AMX tiles: not modelled)" if "amx_bf16" in flags
                          else "unknown for bf16 on this CPU (no AVX512_BF16: bf16 is converted to fp32)")
        if dtype not in (torch.float32, torch.bfloat16):
            return None, f"unknown for {dtype} on CPU"
        isa = torch.backends.cpu.get_cpu_capability()
        per_cycle = _FP32_FLOPS_PER_CYCLE.get(isa)
        basis = f"{isa}, 2 FMA units"
        if isa == "AVX512" and _amd_family() == 25:  # Zen 4 splits each 512-bit op into two 256-bit halves
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
    if kind == "cuda":
        name = torch.cuda.get_device_name(device)
        for key, (fp32, half) in _GPU_PEAKS.items():
            if key in name:
                value = fp32 if dtype == torch.float32 else half
                return (value, f"{key} data sheet, dense {dtype}") if value else (None, f"unknown for {dtype}")
        return None, f"unknown (no data-sheet entry for {name})"
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
