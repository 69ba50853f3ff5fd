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
    """A backend as the book names it: the torch device it runs on, its collective library, where to get one."""

    name: str
    device_type: str          # what torch.device() takes (ROCm GPUs are torch's "cuda" device)
    process_group: str | None  # torch.distributed backend for DDP; None: no DDP on this backend
    where: str                # the "not run yet" hint: what machine runs it


BACKENDS: dict[str, Backend] = {b.name: b for b in (
    Backend("cpu", "cpu", "gloo", "any machine"),
    Backend("cuda", "cuda", "nccl", "a machine with an NVIDIA GPU"),
    Backend("rocm", "cuda", "nccl", "a machine with an AMD GPU and a ROCm build of torch (it runs as `--backend cuda`; "
                                    "NCCL's name covers RCCL)"),
    Backend("xpu", "xpu", "xccl", "a machine with an Intel GPU (Arc, Data Center GPU Max) and torch's xpu build"),
    Backend("mps", "mps", None, "an Apple-silicon Mac"),
)}
DEVICE_TYPES = tuple(dict.fromkeys(b.device_type for b in BACKENDS.values()))  # cpu, cuda, xpu, mps
BACKEND_CHOICES = ("auto",) + DEVICE_TYPES + ("rocm",)
STACKS = ("reference", "current")
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


def stack_label(stack: str) -> str:
    """How a page title names the stack: '' for the reference, ', current stack' otherwise."""
    return "" if stack == "reference" else f", {stack} stack"
