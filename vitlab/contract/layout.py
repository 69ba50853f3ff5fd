"""Where the book keeps things: the backends it knows, and per backend and stack its pages, rows, figures.

Torch-free: `vitlab book` reads rows and builds pages on a machine without torch.

    book/<backend>/NN_name.ipynb                 reference stack (torch 2.8 + IPEX): the book's pages
    book/current/<backend>/NN_name.ipynb         current stack (today's torch, no IPEX)
    book/results/<backend>.jsonl                 reference stack's result rows
    book/results/current/<backend>.jsonl         current stack's result rows
    book/figures/                                the results page's figures
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Backend:
    """One backend, as data. "Backend" means three things, each with its own name here: `name`, the book's page
    name (cpu, cuda, rocm, xpu, mps); `device_type`, the torch device it runs on; `process_group`, the
    torch.distributed library DDP uses on it. vitlab.device, vitlab.machine, vitlab.workers.ddp and the results
    page look these fields up instead of branching on device strings."""

    name: str                  # the book's page name: book/<name>/, book/results/<name>.jsonl, a row's `backend`
    device_type: str           # what torch.device() takes (ROCm GPUs are torch's "cuda" device)
    process_group: str | None  # torch.distributed backend for DDP; None: no DDP on this backend
    where: str                 # the "not run yet" hint: what machine runs it
    synchronize: str | None    # the torch module whose synchronize() waits for the device (torch.cuda, ...); None: none
    bf16_probe: str            # native bf16? cpu-isa (AVX512_BF16 or AMX), device-module (is_bf16_supported()),
    #                            always or never
    peak_source: str | None    # the nominal peak: cpu-isa (ISA x clock x threads), datasheet (vitlab.machine's table)


BACKENDS: dict[str, Backend] = {b.name: b for b in (
    Backend("cpu", "cpu", "gloo", "any machine", None, "cpu-isa", "cpu-isa"),
    Backend("cuda", "cuda", "nccl", "a machine with an NVIDIA GPU", "cuda", "device-module", "datasheet"),
    Backend("rocm", "cuda", "nccl", "a machine with an AMD GPU and torch's ROCm build (NCCL there is RCCL)",
            "cuda", "device-module", "datasheet"),
    Backend("xpu", "xpu", "xccl", "a machine with an Intel GPU (Arc, Data Center GPU Max) and torch's xpu build",
            "xpu", "always", None),
    Backend("mps", "mps", None, "an Apple-silicon Mac", "mps", "never", None),
)}
DEVICE_TYPES = tuple(dict.fromkeys(b.device_type for b in BACKENDS.values()))  # cpu, cuda, xpu, mps
# Per torch device type, its first backend: what runs on it is the same for each backend sharing it (cuda, rocm).
ON_DEVICE: dict[str, Backend] = {t: next(b for b in BACKENDS.values() if b.device_type == t) for t in DEVICE_TYPES}
BACKEND_CHOICES = ("auto",) + DEVICE_TYPES + ("rocm",)
STACKS = ("reference", "current")
REFERENCE_TORCH = "2.8.0"  # the reference stack's torch: requirements/reference.txt's pin (a test keeps them equal)
ROOT = Path(__file__).resolve().parents[2]  # the repository: vitlab/contract/layout.py -> ../..


def _stack_dir(stack: str) -> str:
    if stack not in STACKS:
        raise ValueError(f"unknown stack {stack!r}: choose one of {', '.join(STACKS)}")
    return "" if stack == "reference" else f"{stack}/"


def page(backend: str, stack: str, notebook: str) -> str:
    """The executed notebook's path in the book, without suffix: 'book/current/cpu/02_torch_compile'."""
    return f"book/{_stack_dir(stack)}{backend}/{notebook}"


def pages_dir(backend: str, stack: str, book_dir: Path) -> Path:
    """The folder of `backend`'s executed notebooks on `stack`, under `book_dir` (the book or a scratch folder)."""
    return book_dir / f"{_stack_dir(stack)}{backend}"


def rows_dir(stack: str, book_dir: Path) -> Path:
    """The folder of `stack`'s result-row files, one per backend."""
    return book_dir / "results" / _stack_dir(stack)


def rows_file(backend: str, stack: str, book_dir: Path) -> Path:
    """The result-row file of `backend` on `stack`."""
    return rows_dir(stack, book_dir) / f"{backend}.jsonl"


def figures_dir(book_dir: Path) -> Path:
    """Where the results page's figures go."""
    return book_dir / "figures"

