import pytest
import torch

from vitlab import train

# One epoch in big batches on one thread: a few seconds, yet a real training run end to end.
TINY = dict(train.DIGITS_RECIPE, epochs=1, batch_size=128)


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    threads = torch.get_num_threads()
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # for the fresh interpreter trained() may start
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _same(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_trained_is_deterministic_and_loads_back_what_it_saved(tmp_path, monkeypatch):
    monkeypatch.setenv("VITLAB_CACHE", str(tmp_path))
    recipe = TINY
    first = train.trained("vit-32px", "digits", recipe=recipe)  # trains and saves
    path = train.weights_path("vit-32px", "digits")
    assert path.is_relative_to(tmp_path) and train.saved_recipe(path) == recipe
    stamp = path.stat().st_mtime_ns
    again = train.trained("vit-32px", "digits", recipe=recipe)  # loads
    assert path.stat().st_mtime_ns == stamp and _same(first, again)
    assert not again.training and "trained on digits" in again.vitlab_weights
    # Training again from scratch by the same recipe gives bit-identical weights.
    fresh, losses, data = train.train_recipe("vit-32px", "digits", recipe)
    assert len(losses) == 1 and data.name.startswith("digits")
    if "intel_extension_for_pytorch" not in __import__("sys").modules:  # IPEX's LayerNorm differs
        assert _same(first, fresh)


def test_weights_of_another_recipe_are_not_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("VITLAB_CACHE", str(tmp_path))
    path = train.weights_path("vit-32px", "digits")
    train.save_weights(torch.nn.Linear(2, 2), path, dict(train.DIGITS_RECIPE, epochs=999))
    recipe = TINY
    model = train.trained("vit-32px", "digits", recipe=recipe)  # retrains instead of loading a wrong file
    assert train.saved_recipe(path) == recipe and model.vitlab_img_size == 32
    # Another torch (the current stack shares the cache) trains into its own file and leaves this one be.
    monkeypatch.setattr(torch, "__version__", "0.0.1+cpu")
    stamp = path.stat().st_mtime_ns
    train.trained("vit-32px", "digits", recipe=recipe)
    other = train.weights_path("vit-32px", "digits")
    assert other.name == "vit-32px-digits-torch0.0.1.safetensors" and other.exists()
    assert path.stat().st_mtime_ns == stamp and path != other
