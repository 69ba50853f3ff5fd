import time

import pytest
import torch

from vitlab import models
from vitlab.contract import paths


@pytest.mark.parametrize("name, params, classes", [
    ("vit-b16-hf", 86_567_656, 1000),
    ("vit-b16", 86_567_656, 1000),
    ("vit-ti16", 5_717_416, 1000),
    ("vit-s16", 22_050_664, 1000),
    ("swin-t", 28_288_354, 1000),
    ("vit-32px", 558_218, 10),
    ("swin-32px", 1_269_124, 10),
])
def test_presets_build_with_their_parameter_counts_and_shapes(name, params, classes):
    model = models.build(name)
    assert models.parameter_count(model) == params
    size = model.vitlab_img_size
    with torch.no_grad():
        out = model(torch.randn(2, 3, size, size))
    assert out.shape == (2, classes)  # plain logits, HF models included
    assert model.vitlab_weights == "random init"
    assert not model.training


def test_unknown_model_names_the_presets():
    with pytest.raises(KeyError, match="unknown model 'vit-h14'.*vit-b16-hf"):
        models.build("vit-h14")


@pytest.fixture(scope="module")
def offline_build():
    """vit-b16-hf asked for pretrained with the hub offline: (model, seconds, printed lines), built once."""
    import contextlib
    import io
    import os
    saved = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    paths.hub_offline_reason.cache_clear()
    printed = io.StringIO()
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(printed):
            model = models.build("vit-b16-hf", pretrained=True)
    finally:
        if saved is None:
            del os.environ["HF_HUB_OFFLINE"]
        else:
            os.environ["HF_HUB_OFFLINE"] = saved
        paths.hub_offline_reason.cache_clear()
    return model, time.perf_counter() - start, printed.getvalue().strip().splitlines()


def test_offline_pretrained_falls_back_and_says_so(offline_build):
    model, _, out = offline_build
    assert model.vitlab_weights == "random init (offline: HF_HUB_OFFLINE=1)"
    assert len(out) == 1 and "random weights" in out[0]


@pytest.mark.timing
def test_offline_pretrained_falls_back_fast(offline_build):
    assert offline_build[1] < 15  # no 30-second retry stall


def test_class_names_of_the_hf_model_are_imagenet_names():
    model = models.build("vit-b16-hf")
    assert model.hf.config.id2label[285] == "Egyptian cat"


@pytest.mark.parametrize("name, expected, tolerance", [
    ("vit-b16", 17.58, 0.01), ("vit-b16-hf", 17.58, 0.01), ("swin-t", 4.5, 0.02), ("vit-ti16", 1.26, 0.01),
])
def test_flops_match_the_published_gmacs(name, expected, tolerance):
    assert models.gmacs(models.build(name)) == pytest.approx(expected, rel=tolerance)


def test_preprocess_gives_the_model_its_input_size():
    from vitlab.data import cat_image
    for name in ("vit-ti16-hf", "vit-ti16"):
        model = models.build(name)
        x = models.preprocess(model, cat_image())
        assert x.shape == (1, 3, 224, 224)
        assert -1.5 < float(x.mean()) < 1.5
