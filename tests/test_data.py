import torch

from vitlab import data


def test_cat_photo_and_its_imagenet_name():
    image = data.cat_image()
    assert image.size == (451, 300)
    assert data.imagenet_label(285) == "Egyptian cat"


def test_offline_loader_gives_the_digits_and_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("VITLAB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    d = data.classification_data(img_size=32, dataset="auto", batch_size=16)
    assert d.name == "digits (scikit-learn)"
    assert "CIFAR-10 unavailable" in d.note
    assert (len(d.train.dataset), len(d.test.dataset)) == (1347, 450)
    images, labels = next(iter(d.train))
    assert images.shape == (16, 3, 32, 32) and labels.shape == (16,)
    assert -1.0 <= float(images.min()) and float(images.max()) <= 1.0
    all_labels = torch.cat([y for _, y in d.test])
    assert set(all_labels.tolist()) == set(range(10))  # stratified: every class held out


def test_digits_resize_to_any_size():
    xtr, ytr, xte, yte = data.digits_tensors(img_size=16)
    assert xtr.shape[1:] == (3, 16, 16)
    assert len(xtr) + len(xte) == 1797


def test_unknown_dataset_is_refused():
    import pytest
    with pytest.raises(ValueError, match="unknown dataset 'mnist'"):
        data.classification_data(dataset="mnist")
