"""The recipes the book teaches. Each returns what it made and whether it actually engaged."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from vitlab import ipex as ipex_guard
from vitlab.device import supports_bf16


@dataclass
class Applied:
    """The result of a recipe: the (possibly new) model/optimizer and whether it did anything."""

    model: Any
    engaged: bool
    reason: str
    optimizer: Any = None


def channels_last(model: nn.Module) -> Applied:
    """Store 4-D weights as NHWC; in a ViT/Swin only the patch-embedding convolution has any."""
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    model = model.to(memory_format=torch.channels_last)
    linears = sum(isinstance(m, nn.Linear) for m in model.modules())
    if not convs:
        return Applied(model, False, "no convolutions: channels_last changes nothing")
    return Applied(model, True, f"touches {len(convs)} conv layer(s) (the patch embedding); "
                                f"the {linears} Linear layers that do the work are unaffected")


def autocast(device: torch.device | str, dtype: torch.dtype = torch.bfloat16):
    """torch.amp.autocast for `device` (the portable replacement for torch.cuda.amp)."""
    kind = torch.device(device).type
    return torch.autocast(device_type=kind, dtype=dtype)


def bf16_note(device: torch.device | str) -> tuple[bool, str]:
    """Whether bf16 runs natively on `device`, and why not when it does not."""
    if supports_bf16(device):
        return True, "native bf16"
    isa = torch.backends.cpu.get_cpu_capability()
    return False, (f"no native bf16 on this CPU ({isa}: no AVX512-BF16/AMX); bf16 is emulated "
                   "with fp32 conversions and is expected to be slower")


def compile_model(model: nn.Module, mode: str | None = "default", **kwargs) -> Applied:
    """torch.compile(model, mode); `mode=None` or 'eager' returns the model unchanged."""
    if mode in (None, "eager"):
        return Applied(model, False, "eager: not compiled")
    compiled = torch.compile(model, mode=None if mode == "default" else mode, **kwargs)
    return Applied(compiled, True, f"torch.compile mode={mode}")


def compile_report(mode: str) -> tuple[bool, str]:
    """After a compiled model has run: did CUDA graphs engage, and how many graph breaks were there?

    Call torch._dynamo.reset() and torch._dynamo.utils.counters.clear() before compiling.
    """
    from torch._dynamo.utils import counters
    breaks = sum(counters["graph_break"].values())
    skips = counters["inductor"].get("cudagraph_skips", 0)
    wants_graphs = mode in ("reduce-overhead", "max-autotune")
    note = f"{breaks} graph break(s)"
    if not wants_graphs:
        return True, note
    if skips:
        return False, f"CUDA graphs not engaged (skipped {skips}x, e.g. on a CPU device); {note}"
    return True, f"CUDA graphs engaged; {note}"


def ipex_optimize(model: nn.Module, optimizer=None, dtype: torch.dtype | None = None, **kwargs) -> Applied:
    """ipex.optimize(model[, optimizer][, dtype]) when IPEX is usable; otherwise the model unchanged.

    On CPUs without native bf16 (AVX2) IPEX refuses bf16 weight prepacking; we then retry with
    weights_prepack=False and say so.
    """
    ipex = ipex_guard.load()
    if ipex is None:
        return Applied(model, False, ipex_guard.status(), optimizer)
    args = dict(dtype=dtype, **kwargs)
    if optimizer is not None:
        args["optimizer"] = optimizer
    note = ""
    try:
        out = ipex.optimize(model, **args)
    except (AssertionError, RuntimeError) as error:
        if "weights_prepack" not in str(error):
            return Applied(model, False, f"ipex.optimize failed: {str(error).splitlines()[0][:160]}", optimizer)
        out = ipex.optimize(model, weights_prepack=False, **args)
        note = "; weight prepacking refused on this CPU (needs AVX512-BF16/AVX-NE-CONVERT), ran without it"
    model, optimizer = out if optimizer is not None else (out, None)
    isa = torch.backends.cpu.get_cpu_capability()
    return Applied(model, True, f"ipex.optimize dtype={dtype or torch.float32} on {isa}{note}", optimizer)

