"""Training and evaluation loops, and trained weights on demand for the chapters that need them."""
from __future__ import annotations

import time
from pathlib import Path

import torch
from torch import nn

from vitlab.data import Data, cache_dir, classification_data
from vitlab.device import synchronize
from vitlab.models import build

# How the digits models of the porting chapter are trained (and re-trained on demand).
DIGITS_RECIPE = dict(img_size=32, epochs=30, lr=2e-3, weight_decay=0.05, batch_size=64, seed=0)


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
    """Where the trained weights of preset `name` on `dataset` are kept."""
    return cache_dir() / "weights" / f"{name}-{dataset}.safetensors"


def save_weights(model: nn.Module, path: Path) -> Path:
    """Save the state_dict as safetensors (no pickle: safe to load from anywhere)."""
    from safetensors.torch import save_model
    path.parent.mkdir(parents=True, exist_ok=True)
    save_model(model, str(path))
    return path


def trained(name: str = "vit-32px", dataset: str = "digits", device="cpu") -> nn.Module:
    """Preset `name` trained on `dataset` (digits): loads saved weights, or trains and saves them."""
    from safetensors.torch import load_model
    model = build(name)
    path = weights_path(name, dataset)
    if path.exists():
        load_model(model, str(path))  # safetensors holds tensors only: nothing to unpickle
        model.vitlab_weights = f"trained on {dataset} (vitlab.train.DIGITS_RECIPE)"
        return model.eval()
    recipe = DIGITS_RECIPE
    torch.manual_seed(recipe["seed"])
    model = build(name)
    data = classification_data(recipe["img_size"], dataset, recipe["batch_size"], seed=recipe["seed"])
    fit(model, data, recipe["epochs"], recipe["lr"], recipe["weight_decay"], device, log=False)
    save_weights(model.cpu(), path)
    model.vitlab_weights = f"trained on {dataset} (vitlab.train.DIGITS_RECIPE)"
    return model.eval()
