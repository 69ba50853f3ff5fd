"""The IPEX guard: the only module that imports intel_extension_for_pytorch.

IPEX is archived (last release 2.8, built for torch 2.8 only). On a torch mismatch its import
calls os._exit(127), which kills a Jupyter kernel, and with transformers 5 it raises NameError.
So we check versions first, and import with exits turned into exceptions.
"""
from __future__ import annotations

import importlib
import os
import sys
from functools import lru_cache
from types import ModuleType

from vitlab.machine import versions as installed_versions
from vitlab.contract.text import first_line


def _major_minor(version: str) -> tuple[int, int]:
    major, minor = version.split("+")[0].split(".")[:2]
    return int(major), int(minor)


def check(versions: dict[str, str | None]) -> str | None:
    """Why IPEX cannot be used with these package versions, or None when it can be tried."""
    if os.environ.get("VITLAB_DISABLE_IPEX", "").lower() in ("1", "true", "yes"):
        return "disabled by VITLAB_DISABLE_IPEX=1"
    ipex, torch_version = versions.get("ipex"), versions.get("torch")
    if ipex is None:
        return "intel-extension-for-pytorch is not installed (archived; its last release, 2.8, needs torch 2.8)"
    if torch_version is None or _major_minor(ipex) != _major_minor(torch_version):
        return (f"intel-extension-for-pytorch {ipex} needs torch {'.'.join(map(str, _major_minor(ipex)))}.*, "
                f"found torch {torch_version}")
    transformers = versions.get("transformers")
    if transformers is not None and _major_minor(transformers)[0] >= 5:
        return f"intel-extension-for-pytorch {ipex} fails to import with transformers {transformers} (needs <5)"
    return None


class _ExitAttempt(RuntimeError):
    pass


def _refuse_exit(code=0):
    raise _ExitAttempt(f"it tried to exit the process (code {code})")


def _import_guarded(name: str) -> ModuleType:
    """Import `name` with os._exit/sys.exit turned into an exception for the duration."""
    saved = os._exit, sys.exit
    os._exit = sys.exit = _refuse_exit
    try:
        return importlib.import_module(name)
    finally:
        os._exit, sys.exit = saved


@lru_cache(maxsize=1)
def _load() -> tuple[ModuleType | None, str]:
    why = check(installed_versions())
    if why is None:
        try:
            module = _import_guarded("intel_extension_for_pytorch")
            # IPEX announces that ipex.optimize's own internal defaults ('fuse_update_step', ...) "will be
            # deprecated" at every call: nothing the caller passed or can change, so those lines are dropped.
            import logging
            logging.getLogger("IPEX").addFilter(lambda record: "will be deprecated" not in record.getMessage())
            return module, f"IPEX {module.__version__} loaded"
        except BaseException as error:  # SystemExit and friends included: IPEX must never kill us
            why = f"importing it failed: {first_line(error)}"
    return None, f"IPEX unavailable: {why}"


def load() -> ModuleType | None:
    """The intel_extension_for_pytorch module, or None (then `status()` says why)."""
    return _load()[0]


def status() -> str:
    """One line: 'IPEX 2.8.0 loaded' or 'IPEX unavailable: <why>'."""
    return _load()[1]


def imported() -> bool:
    """True when this process has imported intel_extension_for_pytorch (here or elsewhere), without importing it:
    its kernels then replace some of PyTorch's for the rest of the process."""
    return "intel_extension_for_pytorch" in sys.modules


def available() -> bool:
    """True when IPEX imported cleanly."""
    return load() is not None


def bf16_prepack() -> bool:
    """Whether ipex.optimize can prepack bf16 weights here: oneDNN's bf16 kernels need AVX512BW/VL/DQ or
    AVX-NE-CONVERT, so on an AVX2-only CPU IPEX refuses (pass `weights_prepack=bf16_prepack()` to run unpacked)."""
    ipex = load()
    return bool(ipex is not None and ipex._C.onednn_has_bf16_support())


def failure(error: BaseException, limit: int = 400) -> str:
    """An error's first line, with the cause where it is IPEX's: once IPEX is imported, bf16 inference with fp32
    LayerNorm weights (autocast's) runs through oneDNN, which has no bf16 kernels on a CPU without AVX-512."""
    said = first_line(error, limit)
    if "primitive descriptor" in str(error) and available() and not bf16_prepack():
        said += (" (with IPEX imported, bf16 inference runs LayerNorm through oneDNN, which has no bf16 kernels on "
                 "this CPU: IPEX's bf16 needs AVX-512)")
    return said


def variant(name: str, make, *example, **fields):
    """An IPEX recipe as a vitlab.bench variant: built (`bench.build`) where IPEX loaded, else skipped, saying why."""
    from vitlab import bench
    if not available():
        return bench.Variant.skip(name, status(), **fields)
    return bench.build(name, make, *example, **fields)
