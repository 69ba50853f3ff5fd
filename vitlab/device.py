"""Which backend we run on and how to wait for it (what the machine is: vitlab.machine)."""
from __future__ import annotations

import torch

from vitlab.contract.layout import BACKEND_CHOICES as CHOICES, ON_DEVICE


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
    have = available_backends()
    if backend not in CHOICES:
        raise BackendError(f"unknown backend {backend!r}: choose one of {', '.join(CHOICES)} "
                           f"(this machine has {', '.join(have)})")
    if backend == "rocm":  # ROCm builds of torch drive AMD GPUs through the cuda API
        backend = "cuda"
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
    """Wait until all queued work on `device` has finished (a no-op on CPU): its backend's `synchronize` module."""
    kind = torch.device(device).type
    module = ON_DEVICE[kind].synchronize if kind in ON_DEVICE else None
    if module == "mps":
        torch.mps.synchronize()  # one device, no argument
    elif module:
        getattr(torch, module).synchronize(device)


def supports_bf16(device: torch.device | str) -> bool:
    """True when `device` computes bf16 natively (not emulated, as on AVX2-only CPUs): its backend's `bf16_probe`."""
    kind = torch.device(device).type
    probe = ON_DEVICE[kind].bf16_probe if kind in ON_DEVICE else "never"
    if probe == "device-module":
        return getattr(torch, kind).is_bf16_supported()
    if probe == "always":
        return True
    if probe == "cpu-isa":
        # bf16 dot products in hardware: AVX512_BF16 (VDPBF16PS) or AMX tiles. oneDNN's own
        # _is_mkldnn_bf16_supported() is also True on AVX-512 CPUs without them (it runs bf16 by
        # converting to fp32, slower than fp32), so it cannot tell native from emulated.
        flags = getattr(torch, "cpu", None)
        if flags is not None and hasattr(flags, "_is_avx512_bf16_supported"):
            return bool(flags._is_avx512_bf16_supported() or flags._is_amx_tile_supported())
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    return False
