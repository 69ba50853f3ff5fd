"""Real data that works offline: the cat photo, ImageNet names, CIFAR-10 or the digits set."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from vitlab.contract.paths import cache_dir, hub_offline_reason


def cat_image():
    """scikit-image's 'chelsea' (a tabby cat, 300x451) as a PIL image."""
    import skimage.data
    from PIL import Image
    return Image.fromarray(skimage.data.chelsea())


@lru_cache(maxsize=None)
def _imagenet_info():
    from timm.data import ImageNetInfo
    return ImageNetInfo()


def imagenet_label(index: int) -> str:
    """The ImageNet-1k class name for `index` (timm ships the names)."""
    return _imagenet_info().index_to_description(int(index))


@dataclass
class Data:
    """Train and held-out loaders, and which data set they hold."""

    name: str
    train: DataLoader
    test: DataLoader
    num_classes: int
    img_size: int
    note: str = ""
    dataset: str = "digits"  # which set: "digits" or "cifar10" (the key that names saved weights)

    def __str__(self) -> str:
        return (f"{self.name}: {len(self.train.dataset)} train / {len(self.test.dataset)} held-out images, "
                f"{self.num_classes} classes, {self.img_size} px{'; ' + self.note if self.note else ''}")


def _to_model_input(images: torch.Tensor, img_size: int) -> torch.Tensor:
    """(N,C,h,w) floats in [0,1] -> (N,3,img_size,img_size), normalised to [-1,1]."""
    if images.shape[1] == 1:
        images = images.expand(-1, 3, -1, -1)
    if images.shape[-1] != img_size:
        images = F.interpolate(images, size=(img_size, img_size), mode="bilinear", align_corners=False)
    return (images - 0.5) / 0.5


def digits_tensors(img_size: int = 32, seed: int = 0):
    """scikit-learn's digits (1,797 real 8x8 scans) split 75/25, stratified: (xtr, ytr, xte, yte)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    labels = torch.tensor(digits.target, dtype=torch.long)
    train_idx, test_idx = train_test_split(range(len(labels)), test_size=0.25, random_state=seed,
                                           stratify=digits.target)
    images = _to_model_input(images, img_size)
    return images[train_idx], labels[train_idx], images[test_idx], labels[test_idx]


def _cifar10_tensors(img_size: int, limit: int | None):
    import numpy as np
    import torchvision
    root = cache_dir() / "data"
    sets = [torchvision.datasets.CIFAR10(root, train=train, download=True) for train in (True, False)]
    out = []
    for ds in sets:
        n = len(ds.data) if limit is None else min(limit, len(ds.data))
        images = torch.from_numpy(np.ascontiguousarray(ds.data[:n])).permute(0, 3, 1, 2).float() / 255.0
        out += [_to_model_input(images, img_size), torch.tensor(ds.targets[:n])]
    return out


def _cifar_unavailable() -> str | None:
    """Why CIFAR-10 cannot be had now, or None."""
    if (cache_dir() / "data" / "cifar-10-batches-py").is_dir():
        return None
    return hub_offline_reason()


def classification_data(img_size: int = 32, dataset: str = "auto", batch_size: int = 64,
                        limit: int | None = None, seed: int = 0) -> Data:
    """Loaders of real labelled images: CIFAR-10 when it can be downloaded, else the digits set.

    dataset: "auto", "cifar10" or "digits". limit caps CIFAR-10's images per split.
    """
    if dataset not in ("auto", "cifar10", "digits"):
        raise ValueError(f"unknown dataset {dataset!r}: choose auto, cifar10 or digits")
    note = ""
    tensors, key = None, "digits"
    if dataset in ("auto", "cifar10"):
        why = _cifar_unavailable()
        if why is None:
            try:
                tensors, name = _cifar10_tensors(img_size, limit), "CIFAR-10"
                key = "cifar10"
            except Exception as error:
                why = f"download failed ({error.__class__.__name__})"
        if tensors is None:
            note = f"CIFAR-10 unavailable ({why}), using the digits set"
    if tensors is None:
        tensors, name = digits_tensors(img_size, seed), "digits (scikit-learn)"
    xtr, ytr, xte, yte = tensors
    generator = torch.Generator().manual_seed(seed)
    train = DataLoader(TensorDataset(xtr, ytr), batch_size=batch_size, shuffle=True, generator=generator)
    test = DataLoader(TensorDataset(xte, yte), batch_size=256)
    return Data(name, train, test, 10, img_size, note, key)
