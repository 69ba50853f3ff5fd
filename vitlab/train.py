"""Training and evaluation loops, and trained weights on demand for the chapters that need them."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import torch
from torch import nn

from vitlab.data import Data, classification_data
from vitlab.paths import cache_dir
from vitlab.device import synchronize
from vitlab.models import build

# How the digits models of the porting chapter are trained (and re-trained on demand): vit-32px and
# swin-32px reach 95-99% held-out accuracy with it (seeds 0-3), in about a minute each on 2 cores.
DIGITS_RECIPE = dict(img_size=32, epochs=20, lr=2e-3, weight_decay=0.05, batch_size=32, seed=0)


def _amp(device, dtype: torch.dtype | None):
    """torch.autocast for `device` in `dtype`, or a disabled one when dtype is None."""
    return torch.autocast(torch.device(device).type, dtype=dtype, enabled=dtype is not None)


def train_epoch(model: nn.Module, loader, optimizer, device="cpu", amp_dtype: torch.dtype | None = None,
                memory_format=torch.contiguous_format, scheduler=None, max_batches: int | None = None
                ) -> tuple[float, float]:
    """One pass over `loader` (or its first `max_batches`); returns (mean loss, images/s synchronised)."""
    model.train()
    total, seen = 0.0, 0
    synchronize(device)
    start = time.perf_counter()
    for step, (images, labels) in enumerate(loader):
        if max_batches is not None and step >= max_batches:
            break
        images = images.to(device, memory_format=memory_format)
        labels = labels.to(device)
        with _amp(device, amp_dtype):
            loss = nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        total += loss.item() * len(labels)  # .item() waits for the device: the loss is real
        seen += len(labels)
    synchronize(device)
    return total / seen, seen / (time.perf_counter() - start)


@torch.no_grad()
def predict(model: nn.Module, loader, device="cpu", amp_dtype: torch.dtype | None = None
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits (fp32, on the CPU) and labels of every batch in `loader`."""
    model.eval()
    outputs, labels = [], []
    for images, target in loader:
        with _amp(device, amp_dtype):
            outputs.append(model(images.to(device)).float().cpu())
        labels.append(target)
    return torch.cat(outputs), torch.cat(labels)


def accuracy(model: nn.Module, loader, device="cpu", amp_dtype: torch.dtype | None = None) -> float:
    """Top-1 accuracy on `loader`, in [0, 1]."""
    logits, labels = predict(model, loader, device, amp_dtype)
    return float((logits.argmax(-1) == labels).float().mean())


def fit(model: nn.Module, data: Data, epochs: int, lr: float, weight_decay: float = 0.05,
        device="cpu", log: bool = True) -> list[float]:
    """Train with AdamW and a one-cycle schedule; returns the mean loss of every epoch."""
    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=epochs * len(data.train))
    losses = []
    for epoch in range(epochs):
        loss, _ = train_epoch(model, data.train, optimizer, device, scheduler=scheduler)
        losses.append(loss)
        if log and (epoch + 1) % max(1, epochs // 5) == 0:
            print(f"epoch {epoch + 1}/{epochs}: mean loss {loss:.3f}")
    return losses


def weights_path(name: str, dataset: str) -> Path:
    """Where the trained weights of model `name` on `dataset` are kept, one file per torch release.

    Two stacks sharing the cache (reference and current) would otherwise overwrite each other's
    weights, and each would retrain every time the other had run.
    """
    release = torch.__version__.split("+")[0]
    return cache_dir() / "weights" / f"{name}-{dataset}-torch{release}.safetensors"


def _recipe_key(recipe: dict) -> str:
    return json.dumps(recipe, sort_keys=True)


def save_weights(model: nn.Module, path: Path, recipe: dict | None = None) -> Path:
    """Save the state_dict as safetensors (no pickle: safe to load from anywhere), noting recipe and torch."""
    from safetensors.torch import save_model
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = {"torch": torch.__version__}
    if recipe is not None:
        metadata["recipe"] = _recipe_key(recipe)
    save_model(model, str(path), metadata=metadata)
    return path


def _saved_metadata(path: Path) -> dict:
    from safetensors import safe_open
    with safe_open(str(path), "pt") as f:
        return f.metadata() or {}


def saved_recipe(path: Path) -> dict | None:
    """The recipe stored with the weights at `path` by save_weights, or None."""
    recipe = _saved_metadata(path).get("recipe")
    return None if recipe is None else json.loads(recipe)


def train_recipe(name: str, dataset: str = "digits", recipe: dict | None = None, device="cpu",
                 log: bool = False, num_classes: int | None = None) -> tuple[nn.Module, list[float], Data]:
    """Seed, build preset `name` and fit it on `dataset` by `recipe` (default DIGITS_RECIPE): (model, losses, data)."""
    recipe = DIGITS_RECIPE if recipe is None else recipe  # keys: those of DIGITS_RECIPE (+ optional "limit")
    torch.manual_seed(recipe["seed"])
    model = build(name, num_classes=num_classes)
    data = classification_data(recipe["img_size"], dataset, recipe["batch_size"], limit=recipe.get("limit"),
                               seed=recipe["seed"])
    losses = fit(model, data, recipe["epochs"], recipe["lr"], recipe["weight_decay"], device, log=log)
    return model.eval(), losses, data


def trained(name: str = "vit-32px", dataset: str = "digits", device="cpu", recipe: dict | None = None
            ) -> nn.Module:
    """Preset `name` trained on `dataset` (digits) by `recipe`: loads saved weights, or trains and saves them.

    Saved weights are used only when they were made by the same recipe and torch version (a tuned recipe
    or another stack sharing the cache retrains). Training on the CPU with fixed seeds is deterministic:
    the porting chapter's weights and these agree.
    """
    from safetensors.torch import load_model
    recipe = DIGITS_RECIPE if recipe is None else recipe
    path = weights_path(name, dataset)
    note = f"trained on {dataset} ({'vitlab.train.DIGITS_RECIPE' if recipe == DIGITS_RECIPE else f'recipe {recipe}'})"
    if path.exists() and _saved_metadata(path) == {"recipe": _recipe_key(recipe), "torch": torch.__version__}:
        model = build(name)
        load_model(model, str(path))  # safetensors holds tensors only: nothing to unpickle
    elif "intel_extension_for_pytorch" in sys.modules:
        # Importing IPEX swaps in its own CPU LayerNorm kernel (fp32 results move in the 7th digit), so
        # weights trained here would depend on the caller's imports: train in a fresh interpreter instead.
        subprocess.run([sys.executable, "-m", "vitlab.train", name, dataset, _recipe_key(recipe), str(device)],
                       check=True)
        model = build(name)
        load_model(model, str(path))
    else:
        model, _, _ = train_recipe(name, dataset, recipe, device)
        save_weights(model.cpu(), path, recipe)
    model.vitlab_weights = note
    return model.eval()


if __name__ == "__main__":  # python -m vitlab.train NAME DATASET RECIPE_JSON DEVICE: what trained() runs
    _name, _dataset, _recipe, _device = sys.argv[1:5]
    _model, _, _ = train_recipe(_name, _dataset, json.loads(_recipe), _device)
    save_weights(_model.cpu(), weights_path(_name, _dataset), json.loads(_recipe))
