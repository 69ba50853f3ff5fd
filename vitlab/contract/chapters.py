"""The chapter table: which notebooks are chapters, how a name picks one, which run on a GPU, the presets. Torch-free.

A chapter is notebooks/NN_name.ipynb. A name picks a chapter by its stem (02_torch_compile), its number (02) or the
part after the number (torch_compile); `vitlab run --only`, the GPU lane and its dry run all match this way.
"""
from __future__ import annotations

from pathlib import Path

PATTERN = "[0-9][0-9]_*.ipynb"  # notebooks/NN_name.ipynb, and the executed pages under book/[current/]<backend>/
GPU_CHAPTERS = ("01", "02", "04")  # 03 and 05 measure the host CPU: on a GPU run their rows are not the GPU's
PRESET_NAMES = ("quick", "full", "gpu")  # gpu: the GPU lane's (one GPU, minutes)


def notebooks(folder: Path) -> list[Path]:
    """The chapter notebooks in `folder` (notebooks/, or a folder of executed pages), in order."""
    return sorted(folder.glob(PATTERN))


def matches(name: str, stem: str) -> bool:
    """Whether `name` (a stem, its number or the part after it; a file suffix is dropped) names chapter `stem`."""
    name = Path(name).stem
    return name in (stem, stem[:2], stem[3:])
