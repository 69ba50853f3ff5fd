"""What every chapter does around its lesson: its preset's settings, tables, one-line errors, quiet compiles."""
from __future__ import annotations

import math
import os

PRESET_NAMES = ("quick", "full", "gpu")


def settings(presets: dict[str, dict], preset: str) -> dict:
    """The chapter's settings for `preset` (quick|full); a clear ValueError for any other name."""
    if preset not in presets:
        raise ValueError(f"unknown preset {preset!r}: choose one of {', '.join(presets)}")
    return presets[preset]


def first_line(error: BaseException, limit: int = 160) -> str:
    """'ErrorType: the first line of its message', cut to `limit` characters on a word boundary."""
    message = (str(error).strip().splitlines() or [""])[0]
    text = f"{error.__class__.__name__}: {message}" if message else error.__class__.__name__
    if len(text) > limit:
        text = text[:limit].rsplit(" ", 1)[0] + " …"
    return text


def _cell(value, spec) -> str:
    """One table cell: '–' for missing, yes/no for booleans, else `spec` (a format spec or a function)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return (spec(value) if callable(spec) else format(value, spec)).replace("|", "\\|")


class Markdown(str):
    """A Markdown string that Jupyter displays rendered (no IPython import needed)."""

    def _repr_markdown_(self) -> str:
        return str(self)


def markdown_table(rows: list[dict], formats: dict[str, str] | None = None, columns: list[str] | None = None) -> Markdown:
    """A list of dicts as a Markdown table; `formats` maps a column to a format spec ('.1f') or a function."""
    if not rows:
        return Markdown("*(no rows)*")
    formats = formats or {}
    columns = columns or list(dict.fromkeys(key for row in rows for key in row))
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(row.get(c), formats.get(c, "")) for c in columns) + " |" for row in rows]
    return Markdown("\n".join(lines))


def cores() -> int:
    """The CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def quiet_known_messages(max_cores: int = 4) -> str:
    """What every chapter calls once before it times anything: quiet compile workers, known-harmless messages muted.

    - On a machine with at most `max_cores` cores, Inductor compiles in-process (compile_threads = 1, as
      TORCHINDUCTOR_COMPILE_THREADS=1 would), so its worker pool does not steal the timed cores.
    - "No CUDA runtime is found" (torch.utils.cpp_extension, logged when Inductor or IPEX builds C++ on a
      machine without CUDA) and torchao's enum notice (torch.utils._pytree): harmless there; loggers set to ERROR.
    - "IProgress not found" (tqdm's notebook progress bar without ipywidgets, at timm/transformers import).
    - "aten::layer_norm: an autograd kernel was not registered" (PyTorch, at every backward pass once IPEX has
      replaced layer_norm's CPU kernel; backpropagation then takes a fallback): the chapters that import IPEX
      explain it where they do.
    - "To copy construct from a tensor" (raised inside Inductor's own int8 lowering, not by chapter code) and
      "does not implement _stable_hash_for_caching" (torchao's int8 tensor subclass: Inductor's cache skips it).
    - Inductor's autotuning tables ("AUTOTUNE ...", "Autotune Choices Stats", written to stderr): off; the
      chapters count what was autotuned from Inductor's counters instead.
    Returns one line saying what it did.
    """
    import logging
    import warnings

    import torch._inductor.config as inductor_config
    for name in ("torch.utils.cpp_extension", "torch.utils._pytree"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message="IProgress not found")
    warnings.filterwarnings("ignore", message="aten::layer_norm: an autograd kernel was not registered")
    warnings.filterwarnings("ignore", message="To copy construct from a tensor")
    warnings.filterwarnings("ignore", message=".*does not implement _stable_hash_for_caching")
    inductor_config.autotune_num_choices_displayed = 0
    if hasattr(inductor_config, "max_autotune_report_choices_stats"):  # torch >= 2.9
        inductor_config.max_autotune_report_choices_stats = False
    if cores() <= max_cores:
        inductor_config.compile_threads = 1
    return f"{cores()} cores -> Inductor compile_threads = {inductor_config.compile_threads}"


def steady_allocator(mmap_threshold: int = 32 << 20, trim_threshold: int = 1 << 30, top_pad: int = 64 << 20) -> str:
    """Keep freed tensor memory in this process instead of handing it back to the OS (glibc's malloc only).

    By default glibc serves large blocks with mmap and returns them (and the heap's free top) to the kernel
    as soon as they are freed: every training step or large batch then takes its buffers back through page
    faults, which costs time and, on a shared machine, varies from step to step. `mallopt(3)` with a fixed
    M_MMAP_THRESHOLD (the largest glibc accepts on 64-bit is 32 MiB), a high M_TRIM_THRESHOLD and M_TOP_PAD keep
    those pages mapped for reuse; PyTorch's CPU tuning guides get the same effect by preloading jemalloc or
    tcmalloc. The process keeps more resident memory. Elsewhere (macOS, musl, a preloaded allocator) it does
    nothing. Returns one line saying what it did.
    """
    import ctypes
    import platform

    preloaded = os.environ.get("LD_PRELOAD", "")
    if "jemalloc" in preloaded or "tcmalloc" in preloaded:
        return f"allocator: {preloaded} is preloaded; left as it is"
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return f"allocator: left as it is ({platform.system()} {platform.libc_ver()[0] or 'without glibc'})"
    mallopt = ctypes.CDLL(None).mallopt  # this process's own C library
    M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3  # glibc's malloc.h
    done = [mallopt(option, value) == 1 for option, value in
            ((M_MMAP_THRESHOLD, mmap_threshold), (M_TRIM_THRESHOLD, trim_threshold), (M_TOP_PAD, top_pad))]
    if not all(done):
        return "allocator: glibc refused mallopt; left as it is"
    return (f"allocator: glibc keeps freed memory for reuse (mmap threshold {mmap_threshold >> 20} MiB, "
            f"trim threshold {trim_threshold >> 20} MiB)")
