"""What every chapter does around its lesson: start() (set-up, device, settings, recorder), tables, glue.

    run = vitlab.chapter.start(NOTEBOOK, PRESETS, context)

`context` is the chapter's one papermill parameter, a vitlab.contract.context.RunContext as a dict: what `vitlab run`
hands it (device type, page name, preset, stack, run id, git sha, whether the model hub is offline, where rows go).
A chapter run by hand sets only device type and preset and gets a fresh run id and the scratch results folder.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from vitlab.contract.text import (  # noqa: F401  (re-exported)
    Markdown, first_line, markdown_table, notes_in_full, shorten, yes_no)

from vitlab.contract import layout
from vitlab.contract.chapters import PRESET_NAMES  # noqa: F401  (re-exported)
from vitlab.contract.context import RunContext


def settings(presets: dict[str, dict], preset: str) -> dict:
    """The chapter's settings for `preset` (quick|full); a clear ValueError for any other name."""
    if preset not in presets:
        raise ValueError(f"unknown preset {preset!r}: choose one of {', '.join(presets)}")
    return presets[preset]


def cores() -> int:
    """The CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def quiet_known_messages() -> str:
    """What every chapter calls once before it times anything: known-harmless messages muted.

    - Inductor keeps its default compile workers (one per core). Measured on 2 cores: they cut a cold compile of
      ViT-Ti/16 by a fifth (torch 2.8) to two fifths (torch 2.14), and between compiles the idle workers used no CPU
      time while a model was timed, so they take nothing from the timings.
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
    return f"{cores()} cores, Inductor compile_threads = {inductor_config.compile_threads} (its default)"


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


def telemetry_opt_out() -> str:
    """OpenVINO and NNCF send no usage telemetry from a chapter, unless the user already opted in.

    NNCF reads NNCF_CI at import (nncf/definitions.py); OpenVINO reads its consent file, which
    `opt_in_out --opt_out` writes as "0" (written here only when absent or empty: a user's choice stays).
    """
    os.environ.setdefault("NNCF_CI", "1")
    if importlib.util.find_spec("openvino") is None:
        return "telemetry: OpenVINO not installed"
    consent = Path.home() / "intel" / "openvino_telemetry"
    if not consent.exists() or not consent.read_text().strip():
        consent.parent.mkdir(parents=True, exist_ok=True)
        consent.write_text("0")
    return "telemetry: off" if consent.read_text().strip() == "0" else f"telemetry: on (you opted in: {consent})"


def _hub_offline() -> None:
    """The model hub is unreachable (the runner probed it): fail fast instead of ~30 s of retries."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:  # read at import: a hub already imported needs its constant set too
        constants.HF_HUB_OFFLINE = True


def glue(name: str, value) -> None:
    """myst-nb's glue (the value shows in the page's prose as {glue:text}`name`); a no-op outside myst-nb."""
    try:
        from myst_nb import glue as myst_glue
    except ImportError:  # e.g. on Colab: the chapter runs, the values just are not glued
        return
    myst_glue(name, value, display=False)


@dataclass
class Run:
    """One chapter run: its settings, device, machine description and recorder."""

    notebook: str
    preset: str
    settings: dict
    device: object  # torch.device
    info: dict
    rec: object  # vitlab.results.Recorder
    context: RunContext = field(default_factory=RunContext)
    glued: dict = field(default_factory=dict)

    def recorder_for(self, device):
        """The recorder for rows measured on `device`: this run's own, or (a GPU run's CPU sections) one whose rows
        go to the context's host file, which `vitlab run` does not keep as the backend's rows."""
        import torch
        from vitlab.results import Recorder
        if torch.device(device).type == self.device.type:
            return self.rec
        return Recorder(self.notebook, device, self.preset, self.context.host_rows, self.rec.run_id,
                        self.context.git_sha)

    def glue(self, name: str, value) -> None:
        """Glue `value` into the page's prose as `name` (and keep it in `glued`, e.g. for tests)."""
        self.glued[name] = value
        glue(name, value)

    def glue_finding(self, key: str, finding) -> None:
        """A finding's verdict word, ratio and band glued as `key_verdict`, `key_ratio`, `key_band`, with the rows
        it was computed from as `key_rows` (the consistency test recomputes it from the committed rows)."""
        from vitlab.contract.findings import glue_values
        for name, value in glue_values(key, finding).items():
            self.glue(name, value)


def _page_name(context: RunContext, device) -> str | None:
    """The rows' backend: the context's page name (rocm for a ROCm run) when the chapter runs on the context's
    device; None (the device's own name) for a run by hand, a fallback, or a CPU-only chapter on a GPU run."""
    if context.backend and layout.BACKENDS[context.backend].device_type == device.type:
        return context.backend
    return None


def start(notebook: str, presets: dict | None = None, context: RunContext | dict | None = None, *,
          cpu_only: bool = False, seed: int = 0) -> Run:
    """The chapter's one set-up call: quiet known messages, a steady allocator, telemetry off, seeds; the device
    (an absent backend falls back with one line; `cpu_only`: the chapter measures the CPU whatever is present),
    the preset's settings and the recorder. `context`: a RunContext, its dict, or None (a run by hand: the device
    found, the quick preset). Prints one line: device, ISA and bf16, threads, torch, preset."""
    context = RunContext.of(context)
    preset = context.preset
    if context.hub_offline:
        _hub_offline()
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    chosen = settings(presets, preset) if presets is not None else {}
    import torch

    from vitlab.device import notebook_device
    from vitlab.machine import describe
    from vitlab.results import Recorder
    steady_allocator()
    quiet_known_messages()
    telemetry_opt_out()
    torch.manual_seed(seed)
    device = notebook_device(context.device_type)
    if cpu_only and device.type != "cpu":
        print(f"{device.type} is present, but this chapter measures the CPU: every variant below runs there")
        device = torch.device("cpu")
    info = describe(device)
    from vitlab import timing
    from vitlab.contract.findings import run_to_run_for
    # extra rounds go where they can decide, in this process and in the workers it starts
    os.environ[timing.RUN_TO_RUN_ENV] = str(run_to_run_for(notebook, device.type) or 0.0)
    rec = Recorder(notebook, device, preset, context.rows, context.run_id, context.git_sha,
                   backend=_page_name(context, device))
    bf16 = "native bf16" if info["bf16_native"] else "bf16 emulated"
    print(f"{info['device_name']} ({info['backend']}) · {info['cpu_isa']}, {bf16} · {info['threads']} threads · "
          f"torch {info['versions']['torch']} · preset {preset}")
    return Run(notebook, preset, chosen, device, info, rec, context)
