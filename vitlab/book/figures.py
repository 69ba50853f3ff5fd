"""What each chapter figure shows, in words: the alt text its image gets on the page.

A chapter's figures are notebook outputs (matplotlib PNGs), which carry no description of their own; docutils would
give each <img> its file path as alt text. The book's extension book/_ext/figure_alt.py fills in the text below at
build time, for the chapter in `notebooks/` and for every executed copy of it in book/[current/]<backend>/ alike, so
no notebook has to be edited or re-run. A figure is found by its chapter (the notebook's stem) and the id of the code
cell that draws it: papermill keeps cell ids, so the clean chapter and its pages share them, and they survive edits
to the cell's code. A cell whose metadata already sets myst-nb's own `mystnb: {image: {alt: ...}}` keeps that text.

A figure cell that is not listed here (a new figure, or a cell that got a new id) stops the strict build with a
warning that names the chapter and cell id: add the line below. The texts describe what is drawn, not this run's
numbers, which differ between stacks and machines and are in the page's text and tables.
"""
from __future__ import annotations

import re

ALT: dict[str, dict[str, str]] = {
    "01_port_to_xpu": {
        "c15": "Line chart: mean training loss per epoch, on a log scale, of each 32-px model (ViT and Swin) trained "
               "with the ported loop, the legend giving each model's held-out accuracy",
        "c26": "Grouped bar chart: speed of each training-step variant over fp32 (images/s) for each 32-px model, "
               "with 95% interval whiskers and a dashed line at 1×; a variant that was not timed shows its status "
               "(skipped, failed) instead of a bar",
        "fd7979cc": "Grouped bar chart: speed of each training-step variant, torch.compile included, over fp32 "
                    "(images/s) for ViT-B/16 and Swin-T at 224 px, with 95% interval whiskers and a dashed line at "
                    "1×; a variant that was not timed shows its status (skipped, failed) instead of a bar",
    },
    "02_torch_compile": {
        "05744376": "The sample cat photo given to the model, titled with the ImageNet class eager fp32 predicts, or, "
                    "with random weights when offline, a note that every mode picks eager fp32's class",
        "9a92cb6b": "Two horizontal bar charts, one bar per mode (eager and each torch.compile mode): left, latency "
                    "per call at batch 1 (median bar, p90 whisker, labelled with the speedup over eager); right, the "
                    "first call's time (cold compile plus one run)",
        "89d93a9d": "Two line charts over batch size, one line per mode and precision: left, median latency per call "
                    "(log scales); right, achieved GFLOP/s and images/s, with the measured GEMM ceiling and the "
                    "nominal peak of each precision as horizontal lines",
    },
    "03_ipex_bf16_int8": {
        "ch03-36": "Two horizontal bar charts of the digits ViT's variants, coloured by runtime (eager, IPEX, "
                   "Inductor): left, batch-1 latency (median, whisker to p90; lower is better); right, images/s at "
                   "the large batch (higher is better), each bar labelled with its top-1 accuracy",
    },
    "04_hardware_integration": {
        "f9a64091": "Horizontal bar chart: DDP training throughput of vit-32px (images/s, all ranks together) over "
                    "one rank with the same threads, for two ranks and, where drawn, one process with all cores, "
                    "with 95% interval whiskers, a line at 1× and each bar labelled with its ratio",
        "b876fe7b": "Two horizontal bar charts, batch 1 and the large batch: speed of each quantization variant of "
                    "vit-32px over eager fp32, with 95% interval whiskers, a line at 1× and "
                    "each bar labelled with its ratio",
    },
    "05_deploy_after_ipex": {
        "c44": "For each model, two horizontal bar charts coloured by runtime (PyTorch, OpenVINO, ONNX Runtime, "
               "Optimum Intel): left, each variant's batch-1 median latency; right, how many held-out images get a "
               "different top-1 answer than eager fp32",
        "996d0f4c": "Stacked horizontal bars, one panel per profiled case (precision and batch): milliseconds per "
                    "call of the PyTorch variant and its OpenVINO counterpart, split into linear layers, attention "
                    "and everything else",
    },
}

IMAGE_TYPES = ("image/png", "image/jpeg", "image/svg+xml", "image/gif")
_PATH = re.compile(r"(^|/)[^/\s]+\.(png|jpe?g|svg|gif)$", re.IGNORECASE)


def alt_text(chapter: str, cell_id: str | None) -> str | None:
    """The alt text of the figure drawn by cell `cell_id` of chapter `chapter` (a notebook stem); None if unlisted."""
    return ALT.get(chapter, {}).get(cell_id) if cell_id else None


def figure_cells(notebook: dict) -> list[tuple[int, str | None, str]]:
    """The code cells of a notebook (its JSON) with an image output: (index, cell id, first source line)."""
    out = []
    for index, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        if any(kind in output.get("data", {}) for output in cell.get("outputs", []) for kind in IMAGE_TYPES):
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else source
            first = next((line for line in source.splitlines() if line.strip()), "")
            out.append((index, cell.get("id"), first))
    return out


def is_path(alt: str | None) -> bool:
    """Whether an alt text is missing or only a file name or path (what docutils writes when none is given)."""
    return not (alt or "").strip() or bool(_PATH.search(alt.strip()))
