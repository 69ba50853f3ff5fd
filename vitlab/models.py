"""ViT and Swin builders: one door, build(name), over a table of named models (MODELS)."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from vitlab.contract.paths import hub_offline_reason
from vitlab.contract.text import first_line


@dataclass(frozen=True)
class ModelSpec:
    """A named model: where it comes from, its input size, and where its weights live."""

    source: str                 # "timm" or "hf"
    arch: str                   # timm model name, or the HF hub id whose architecture we build
    img_size: int
    num_classes: int = 1000
    hub_id: str | None = None   # pretrained weights on the hub; None = no pretrained weights
    kwargs: dict = field(default_factory=dict)
    summary: str = ""


MODELS: dict[str, ModelSpec] = {
    "vit-b16-hf": ModelSpec("hf", "google/vit-base-patch16-224", 224, hub_id="google/vit-base-patch16-224",
                         kwargs=dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                     intermediate_size=3072, patch_size=16),
                         summary="ViT-B/16 (transformers), ImageNet-1k: the seed's model"),
    "vit-ti16-hf": ModelSpec("hf", "WinKawaks/vit-tiny-patch16-224", 224, hub_id="WinKawaks/vit-tiny-patch16-224",
                          kwargs=dict(hidden_size=192, num_hidden_layers=12, num_attention_heads=3,
                                      intermediate_size=768, patch_size=16),
                          summary="ViT-Ti/16 (transformers), ImageNet-1k: the quick stand-in for ViT-B/16"),
    "vit-ti16": ModelSpec("timm", "vit_tiny_patch16_224", 224, hub_id="timm/vit_tiny_patch16_224.augreg_in21k_ft_in1k",
                       summary="ViT-Ti/16 (timm)"),
    "vit-s16": ModelSpec("timm", "vit_small_patch16_224", 224, hub_id="timm/vit_small_patch16_224.augreg_in21k_ft_in1k",
                      summary="ViT-S/16 (timm)"),
    "vit-b16": ModelSpec("timm", "vit_base_patch16_224", 224, hub_id="timm/vit_base_patch16_224.augreg2_in21k_ft_in1k",
                      summary="ViT-B/16 (timm)"),
    "swin-t": ModelSpec("timm", "swin_tiny_patch4_window7_224", 224,
                     hub_id="timm/swin_tiny_patch4_window7_224.ms_in1k", summary="Swin-T (timm)"),
    # Small models for 32-pixel data (CIFAR-10, digits).
    "vit-32px": ModelSpec("timm", "vit_tiny_patch16_224", 32, num_classes=10,
                       kwargs=dict(patch_size=8, embed_dim=128, depth=4, num_heads=4, mlp_ratio=2.0,
                                   class_token=False, global_pool="avg"),  # mean-pooled: steadier on small data
                       summary="ViT, 4 layers x 128 wide, patch 8 (a 4x4 token grid), mean-pooled, for 32 px"),
    "swin-32px": ModelSpec("timm", "swin_tiny_patch4_window7_224", 32, num_classes=10,
                        kwargs=dict(patch_size=4, window_size=4, embed_dim=48, depths=(2, 2, 2),
                                    num_heads=(3, 6, 12)),
                        summary="Swin, 3 stages x 2 blocks, patch 4 (8x8 tokens), window 4, for 32 px"),
}


class HFLogits(nn.Module):
    """A transformers image classifier that takes pixels and returns plain logits (traceable)."""

    def __init__(self, hf_model: nn.Module):
        super().__init__()
        self.hf = hf_model

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.hf(pixel_values=pixel_values).logits


def _imagenet_labels() -> dict[int, str]:
    from vitlab.data import imagenet_label
    return {i: imagenet_label(i) for i in range(1000)}


def _build_hf(spec: ModelSpec, pretrained: bool, num_classes: int) -> nn.Module:
    import warnings
    with warnings.catch_warnings():  # tqdm's "IProgress not found" when a notebook lacks ipywidgets: harmless
        warnings.filterwarnings("ignore", message="IProgress not found")
        from transformers import ViTConfig, ViTForImageClassification
    if pretrained:
        return ViTForImageClassification.from_pretrained(spec.hub_id)
    labels = _imagenet_labels() if num_classes == 1000 else {i: str(i) for i in range(num_classes)}
    config = ViTConfig(image_size=spec.img_size, num_labels=num_classes, id2label=labels,
                       label2id={v: k for k, v in labels.items()}, **spec.kwargs)
    return ViTForImageClassification(config)


def _build_timm(spec: ModelSpec, pretrained: bool, num_classes: int) -> nn.Module:
    import timm
    if pretrained:
        return timm.create_model(spec.hub_id.replace("timm/", ""), pretrained=True, num_classes=num_classes)
    return timm.create_model(spec.arch, pretrained=False, img_size=spec.img_size,
                             num_classes=num_classes, **spec.kwargs)


def build(name: str, pretrained: bool = False, num_classes: int | None = None) -> nn.Module:
    """Build model `name` (see MODELS) in eval mode; it maps pixels (N,3,H,W) to logits (N,classes).

    With pretrained=True the hub's weights are loaded when the hub is reachable; otherwise the same
    architecture gets random weights and one line says so. `model.vitlab_weights` says which, and `model.vitlab_pretrained` is True only when the hub's
    weights loaded.
    """
    if name not in MODELS:
        raise KeyError(f"unknown model {name!r}: choose one of {', '.join(MODELS)}")
    spec = MODELS[name]
    num_classes = num_classes or spec.num_classes
    builder = _build_hf if spec.source == "hf" else _build_timm
    weights = "random init"
    if pretrained and spec.hub_id is None:
        weights = "random init (this model has no pretrained weights)"
        pretrained = False
    elif pretrained:
        why = hub_offline_reason()
        if why is None:
            try:
                model = builder(spec, True, num_classes)
                weights = f"pretrained: {spec.hub_id}"
            except Exception as error:  # hub hiccup, missing file: fall back, say why
                why = f"hub load failed ({first_line(error, 120)})"
        if why is not None:
            weights = f"random init ({why})"
            print(f"{name}: pretrained weights unavailable, {why}; using random weights "
                  "(predicted labels are meaningless)")
            pretrained = False
    if not pretrained:
        model = builder(spec, False, num_classes)
    if spec.source == "hf":
        model = HFLogits(model)
    model.vitlab_name = name
    model.vitlab_weights = weights
    model.vitlab_pretrained = pretrained
    model.vitlab_img_size = spec.img_size
    return model.eval()


def parameter_count(model: nn.Module) -> int:
    """Number of parameters."""
    return sum(p.numel() for p in model.parameters())


def count_flops(model: nn.Module, img_size: int | None = None, batch: int = 1) -> int:
    """FLOPs of one forward pass on a (batch,3,H,W) input, counted by torch.utils.flop_counter."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode
    img_size = img_size or model.vitlab_img_size
    param = next(model.parameters())
    x = torch.zeros(batch, 3, img_size, img_size, device=param.device, dtype=param.dtype)
    counter = FlopCounterMode(display=False)
    # The fused CPU attention kernel has no FLOP formula; the math kernel's matmuls are counted.
    with counter, torch.no_grad(), sdpa_kernel(SDPBackend.MATH):
        model(x)
    return counter.get_total_flops()


def gmacs(model: nn.Module, img_size: int | None = None) -> float:
    """Multiply-accumulates per image, in billions (the unit of timm's tables: FLOPs / 2)."""
    return count_flops(model, img_size) / 2 / 1e9


def preprocess(model: nn.Module, image) -> torch.Tensor:
    """A PIL image turned into a (1,3,H,W) batch the way the model's weights expect."""
    if isinstance(model, HFLogits):
        from transformers import ViTImageProcessor
        size = model.vitlab_img_size
        processor = ViTImageProcessor(size={"height": size, "width": size})  # the google/vit-* defaults
        return processor(images=image, return_tensors="pt")["pixel_values"]
    import timm.data
    config = timm.data.resolve_model_data_config(model)
    return timm.data.create_transform(**config)(image.convert("RGB")).unsqueeze(0)
