"""What the book knows about GPUs by name: their data-sheet peaks and the short name a page title uses. Torch-free."""
from __future__ import annotations

import re

# Dense fp32 / bf16 peaks (FLOP/s) from the vendors' data sheets, matched as whole words in the
# device name, longest name first ("L4" must not match "L40S"; "H200 NVL" is not the SXM part).
_GPU_PEAKS = {
    "H200 NVL": (60e12, 835e12), "H200": (67e12, 989e12), "H100 NVL": (60e12, 835e12),
    "H100 PCIe": (51e12, 756e12), "H100": (67e12, 989e12), "A100": (19.5e12, 312e12),
    "L40S": (91.6e12, 362e12), "L4": (30.3e12, 121e12), "T4": (8.1e12, None), "MI210": (22.6e12, 181e12),
    "MI250": (45.3e12, 362e12), "MI300X": (163.4e12, 1307e12),
}


def gpu_datasheet(name: str) -> tuple[str, tuple] | None:
    """(entry, (fp32, bf16) peaks) of the data-sheet entry naming this GPU, or None."""
    for key in sorted(_GPU_PEAKS, key=len, reverse=True):
        if re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", name):
            return key, _GPU_PEAKS[key]
    return None


def short_name(name: str) -> str:
    """How a page title names a GPU whose rows name it (`device_name`): without NVIDIA's prefix ('NVIDIA H200' ->
    'H200'); other names as they are."""
    return name.removeprefix("NVIDIA ")
