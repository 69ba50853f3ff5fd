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
    assert fresh.vitlab_weights == again.vitlab_weights  # trained, not build()'s "random init": rows score it
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


def test_compare_steps_times_every_variant_in_rounds_and_a_cut_backward_is_a_failed_row(tmp_path):
    from torch import nn
    from vitlab.results import Recorder
    from vitlab.timing import Ceiling
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 16), nn.LayerNorm(16), nn.Linear(16, 4))

    def make_step(net, optimizer, device, amp=None, memory_format=None):
        def step(images, labels):
            features = net[:3](images)
            if amp is not None:  # this variant cuts its backward pass: only the last layer learns
                features = features.detach()
            logits = net[3](features)
            optimizer.zero_grad(set_to_none=True)
            nn.functional.cross_entropy(logits, labels).backward()
            optimizer.step()
            return logits
        return step

    images, labels = torch.randn(8, 3, 8, 8), torch.randint(0, 4, (8,))
    rec = Recorder("01_test", "cpu", "quick", tmp_path / "rows.jsonl")
    ceilings = {"fp32": Ceiling(1e9, "test")}
    rows = train.compare_steps(rec, "tiny", model, make_step, images, labels, [(images, labels)],
                               variants=("fp32", "bf16 autocast", "torch.compile", "fp32 (re-timed)"), budget_s=0.2,
                               warmup=2, flops_per_item=1000.0, ceilings=ceilings,
                               skipped={"torch.compile": "this preset compiles another model"})
    by = {r["variant"]: r for r in rows}
    assert [r["variant"] for r in rows] == ["fp32", "bf16 autocast", "torch.compile", "fp32 (re-timed)"]
    assert by["torch.compile"]["status"] == "skipped" and by["torch.compile"].get("first_step_s") is None
    assert by["torch.compile"]["skipped"] == "this preset compiles another model"
    assert by["bf16 autocast"]["status"] == "failed" and by["bf16 autocast"].get("median_ms") is None
    assert "gave 2 of 6 trainable parameters a gradient" in by["bf16 autocast"]["failed"]
    for variant in ("fp32", "fp32 (re-timed)"):
        row = by[variant]
        assert row["status"] == "ok" and row["rounds"] >= 6 and len(row["round_medians_ms"]) == row["rounds"]
        assert row["grads_with"] == row["grads_total"] == 6 and row["budget_s"] == 0.2
        assert row["flops_per_s"] == pytest.approx(3 * 1000.0 * 8 / (row["median_ms"] / 1000), rel=1e-3)
    assert by["fp32"]["timing_session"] == by["fp32 (re-timed)"]["timing_session"]  # one interleaved call
    assert "| held-out |" in train.step_table(rows)
    assert "held-out" not in train.step_table(rows, accuracy=False)  # random weights: no accuracy
    assert 0 <= by["fp32"]["accuracy"] <= 1 and "weights" not in by["fp32"]
    model.vitlab_weights = "random init"  # a model with random weights: timed, not scored
    fresh = train.compare_steps(rec, "tiny", model, make_step, images, labels, [(images, labels)],
                                variants=("fp32",), budget_s=0.05, warmup=1)
    assert fresh[0].get("accuracy") is None and fresh[0]["weights"] == "random, speed only"
    assert by["fp32 (re-timed)"]["control"] is True and by["fp32"]["baseline"] is True
    assert train.gradient_check(by["bf16 autocast"]) == "only 2 of 6 trainable parameters got a gradient (a failed row)"


def test_the_chapters_ported_step_is_the_packages():
    """Chapter 01 shows make_train_step as its recipe; vitlab.train.make_train_step is the same code (#@save)."""
    import inspect
    import nbformat
    from vitlab.contract import layout
    notebook = nbformat.read(layout.ROOT / "notebooks" / "01_port_to_xpu.ipynb", as_version=4)
    (cell,) = [c.source for c in notebook.cells if c.source.startswith("def make_train_step(")]
    assert cell.strip() == inspect.getsource(train.make_train_step).strip()


def test_the_backward_probes_get_every_gradient_in_a_process_without_ipex():
    import subprocess
    import sys
    code = ("from vitlab import train\n"
            "print([train.probe_said(train.compiled_backward_probe(c)) for c in train.PROBES])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "TORCHINDUCTOR_AUTOGRAD_CACHE": "0"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == str(["ran; 4 of 4 parameters got a gradient"] * 3)


def test_compile_skipped_skips_a_second_compile_in_a_process_where_one_failed(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "intel_extension_for_pytorch", sys)  # this process imported IPEX
    earlier = [{"model": "vit-32px", "variant": "torch.compile", "failed": "TypeError: expected Tensor()"},
               {"model": "vit-32px", "variant": "fp32", "median_ms": 1.0}]
    (reason,) = train.compile_skipped("vit-b16", ("vit-b16",), "quick", failed_here=earlier).values()
    assert "already failed in this process (vit-32px" in reason and "fresh process" in reason
    compiled = [{**earlier[0], "failed": None, "median_ms": 1.0}]  # the earlier compile ran: try this one too
    assert train.compile_skipped("vit-b16", ("vit-b16",), "quick", failed_here=compiled) == {}
    assert train.compile_skipped("vit-b16", ("vit-b16",), "quick", failed_here=None) == {}
    monkeypatch.delitem(sys.modules, "intel_extension_for_pytorch")  # a failure without IPEX: try again
    assert train.compile_skipped("vit-b16", ("vit-b16",), "quick", failed_here=earlier) == {}
    monkeypatch.setitem(sys.modules, "intel_extension_for_pytorch", sys)
    # a model the preset does not compile keeps the preset's reason
    assert "preset compiles" in train.compile_skipped("swin-t", ("vit-b16",), "quick", failed_here=earlier)[
        "torch.compile"]


def test_compile_skipped_names_the_compiled_models_and_leaves_them_alone():
    assert train.compile_skipped("vit-32px", ("vit-32px",), "quick") == {}
    (reason,) = train.compile_skipped("swin-32px", ("vit-32px",), "quick").values()
    assert reason.startswith("the quick preset compiles the training step of vit-32px only")
    assert train.compile_skipped("swin-t", (), "full")["torch.compile"].startswith("the full preset compiles no training")


def test_the_probe_sentence_names_the_failure_only_where_ipex_is_imported():
    raised = {"outcome": "raised", "error": "TypeError: expected Tensor()"}
    ran = {"outcome": "ran", "grads_with": 4, "grads_total": 4}
    assert train.probe_sentence(raised, True) == ("The smallest case of the failure with IPEX imported, attention "
                                                  "followed by LayerNorm, compiled: raised TypeError: expected Tensor().")
    without = train.probe_sentence(ran, False)
    assert without.startswith("Without IPEX,") and without.endswith("ran; 4 of 4 parameters got a gradient.")


def test_a_variant_that_trains_but_cannot_predict_is_a_failed_row_that_says_why(tmp_path):
    from torch import nn
    from vitlab.results import Recorder

    class TrainsOnly(nn.Module):  # as IPEX's bf16 LayerNorm on an AVX2-only CPU: fine in training, not in eval
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(3 * 8 * 8, 4)

        def forward(self, x):
            if not self.training and x.is_floating_point() and torch.is_autocast_enabled("cpu"):
                raise RuntimeError("could not create a primitive descriptor for the layer normalization primitive")
            return self.linear(x.flatten(1))

    def make_step(net, optimizer, device, amp=None, memory_format=None):
        def step(images, labels):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp is not None):
                logits = net(images)
            optimizer.zero_grad(set_to_none=True)
            nn.functional.cross_entropy(logits.float(), labels).backward()
            optimizer.step()
            return logits
        return step

    images, labels = torch.randn(8, 3, 8, 8), torch.randint(0, 4, (8,))
    rec = Recorder("01_test", "cpu", "quick", tmp_path / "rows.jsonl")
    rows = train.compare_steps(rec, "tiny", TrainsOnly(), make_step, images, labels, [(images, labels)],
                               variants=("fp32", "bf16 autocast"), budget_s=0.1, warmup=1)
    by = {r["variant"]: r for r in rows}
    assert by["fp32"]["status"] == "ok"
    assert by["bf16 autocast"]["status"] == "failed" and by["bf16 autocast"].get("median_ms") is None
    assert by["bf16 autocast"]["failed"].startswith("its held-out prediction failed: RuntimeError: could not create")
    assert [r["variant"] for r in rec.rows] == ["fp32", "bf16 autocast"]  # both written, the failure included


def test_emulated_bf16_steps_are_skipped_at_224_px_only_where_bf16_is_emulated():
    from vitlab import optimize
    native, why = optimize.bf16_note("cpu")
    skipped = train.emulated_bf16_skipped("cpu")
    if native:
        assert skipped == {}
    else:
        assert set(skipped) == {"bf16 autocast", "ipex.optimize bf16"}
        assert all(reason.startswith(why) for reason in skipped.values())
