"""Training and evaluation loops, and trained weights on demand for the chapters that need them."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from vitlab.data import Data, classification_data
from vitlab.contract.paths import cache_dir
from vitlab.contract.rows import status_of
from vitlab.device import synchronize
from vitlab.ipex import imported as ipex_imported
from vitlab.models import build

# How the digits models of the porting chapter are trained (and re-trained on demand): vit-32px and
# swin-32px reach 95-99% held-out accuracy with it (seeds 0-3), in 20-40 s each on 2 Zen 3 cores.
# 20 epochs gave no better models (96.4% and 97.1% at seed 0) for two thirds more time: chapter 01 and
# each CI lane train both models, so the epochs are fixed work that every quick run pays.
DIGITS_RECIPE = dict(img_size=32, epochs=12, lr=2e-3, weight_decay=0.05, batch_size=32, seed=0)


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
    model.vitlab_weights = weights_note(dataset, recipe)  # no longer build()'s "random init": its labels mean something
    return model.eval(), losses, data


def weights_note(dataset: str, recipe: dict) -> str:
    """What a model trained on `dataset` by `recipe` says of its weights (`model.vitlab_weights`)."""
    return f"trained on {dataset} ({'vitlab.train.DIGITS_RECIPE' if recipe == DIGITS_RECIPE else f'recipe {recipe}'})"


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
    if path.exists() and _saved_metadata(path) == {"recipe": _recipe_key(recipe), "torch": torch.__version__}:
        model = build(name)
        load_model(model, str(path))  # safetensors holds tensors only: nothing to unpickle
    elif ipex_imported():
        # Importing IPEX swaps in its own CPU LayerNorm kernel (fp32 results move in the 7th digit), so
        # weights trained here would depend on the caller's imports: train in a fresh interpreter instead.
        subprocess.run([sys.executable, "-m", "vitlab.workers.train", name, dataset, _recipe_key(recipe), str(device)],
                       check=True)
        model = build(name)
        load_model(model, str(path))
    else:
        model, _, _ = train_recipe(name, dataset, recipe, device)
        save_weights(model.cpu(), path, recipe)
    model.vitlab_weights = weights_note(dataset, recipe)
    return model.eval()


def make_train_step(model, optimizer, device, amp_dtype=None,
                    memory_format=torch.contiguous_format):
    """The ported step: runs unchanged on cpu, cuda, xpu and mps; returns the logits."""
    def step(images, labels):
        images = images.to(device, memory_format=memory_format)  # was: inputs.cuda()
        labels = labels.to(device)  # was: targets.cuda()
        amp = amp_dtype is not None  # was: torch.cuda.amp.autocast()
        with torch.autocast(device.type, dtype=amp_dtype, enabled=amp):
            logits = model(images)
            loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # bf16 needs no GradScaler
        optimizer.step()
        return logits
    return step


def seed_shape_batch(batch: int, img_size: int = 224, seed: int = 0, device="cpu"
                     ) -> tuple[torch.Tensor, torch.Tensor, str]:
    """One batch of real labelled images at the seed's size: the digits, upscaled (no download), on `device`:
    (images, labels, the dataset's name)."""
    data = classification_data(img_size, "digits", batch, seed=seed)
    images, labels = next(iter(data.train))
    return images.to(device), labels.to(device), data.name


# ---- The porting chapter's harness: each of the seed's changes as one timed training-step variant ----------------

STEP_VARIANTS = ("fp32", "channels_last", "bf16 autocast", "ipex.optimize fp32", "ipex.optimize bf16",
                 "torch.compile", "fp32 (re-timed)")
_STEP_FIELDS = {  # structured row fields: what each variant changes (the name is for people)
    "fp32": dict(precision="fp32", runtime="eager"),
    "fp32 (re-timed)": dict(precision="fp32", runtime="eager", control=True),  # the baseline again: the run's drift
    "channels_last": dict(precision="fp32", runtime="eager", memory_format="channels_last"),
    "bf16 autocast": dict(precision="bf16", runtime="eager"),
    "ipex.optimize fp32": dict(precision="fp32", runtime="ipex"),
    "ipex.optimize bf16": dict(precision="bf16", runtime="ipex"),
    "torch.compile": dict(precision="fp32", runtime="inductor", mode="default"),
}


def try_line(line: str, action) -> None:
    """Run one line of a training script (`action`) and print what it did and what it warned."""
    import warnings
    from vitlab.contract.text import first_line, shorten
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            outcome = action()
        except Exception as error:
            outcome = f"raises {first_line(error, 120)}"
    print(f"{line}\n    -> {outcome}")
    for warning in caught:
        print(f"    -> warns {warning.category.__name__}: {shorten(str(warning.message), 110)}")


def train_and_record(rec, name: str, dataset: str, recipe: dict, device="cpu", num_classes: int = 10):
    """train_recipe(...) timed, its held-out accuracy, and one 'training run' row: (model, losses, data, row)."""
    start = time.perf_counter()
    model, losses, data = train_recipe(name, dataset, recipe, device, log=False, num_classes=num_classes)
    seconds = time.perf_counter() - start
    correct = accuracy(model, data.test, device)
    rate = recipe["epochs"] * len(data.train.dataset) / seconds
    row = rec.record(name, "training run fp32", recipe["batch_size"], group="training run", baseline=True,
                     reason=f"the ported loop, {recipe['epochs']} epochs on {data.name}", accuracy=correct,
                     train_s=round(seconds, 1), train_images_per_s=round(rate, 1), final_loss=losses[-1],
                     dataset=data.name, recipe=recipe, precision="fp32", runtime="eager")
    return model, losses, data, row


def gradients(model: nn.Module) -> tuple[list[str], int]:
    """The trainable parameters that hold a gradient (zero_grad(set_to_none) before the step), and how many there are."""
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    return [n for n, p in params if p.grad is not None], len(params)


def prepare_step(variant: str, trained_model: nn.Module, device="cpu"):
    """A copy of `trained_model` set up for `variant` with an lr-0 AdamW (all the arithmetic, weights unchanged):
    (model, optimizer, amp dtype, memory format, engaged, reason)."""
    import copy
    from vitlab import optimize
    model = copy.deepcopy(trained_model).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.0)
    amp, fmt, engaged, reason = None, torch.contiguous_format, True, "the ported loop, eager fp32"
    if variant == "channels_last":
        applied = optimize.channels_last(model)
        model, fmt, engaged, reason = applied.model, torch.channels_last, applied.engaged, applied.reason
    elif variant == "bf16 autocast":
        amp, reason = torch.bfloat16, f"torch.autocast({torch.device(device).type!r}, bfloat16): " \
                                      f"{optimize.bf16_note(device)[1]}"
    elif _STEP_FIELDS.get(variant, {}).get("runtime") == "ipex":
        amp = torch.bfloat16 if _STEP_FIELDS[variant]["precision"] == "bf16" else None
        applied = optimize.ipex_optimize(model, optimizer, dtype=amp)
        model, optimizer, engaged, reason = applied.model, applied.optimizer, applied.engaged, applied.reason
    elif variant == "torch.compile":
        from torch._dynamo.utils import counters
        torch._dynamo.reset()
        counters.clear()
        applied = optimize.compile_model(model)
        model, reason = applied.model, applied.reason
    return model, optimizer, amp, fmt, engaged, reason


def first_step(variant: str, trained_model: nn.Module, make_step, images, labels, device="cpu") -> dict:
    """`variant` prepared and its step made by `make_step(model, optimizer, device, amp, memory_format)`; its first
    step (the compile, where anything compiles) run and timed apart. Returns what timing and recording need."""
    from vitlab import optimize
    model, optimizer, amp, fmt, engaged, reason = prepare_step(variant, trained_model, device)
    step = make_step(model, optimizer, device, amp, fmt)
    synchronize(device)
    start = time.perf_counter()
    logits = step(images, labels)
    synchronize(device)
    if amp is not None:  # did autocast really compute in bf16?
        engaged = engaged and logits.dtype == amp
    if variant == "torch.compile":
        reason += "; " + optimize.compile_report("default", device)[1]
    return dict(step=step, model=model, amp=amp, engaged=engaged, reason=reason,
                first_step_s=round(time.perf_counter() - start, 3))


def _cut_backward(rec, name, variant, ready, batch, common) -> dict | None:
    """The failed row of a variant whose first backward pass left trainable parameters without a gradient (it does
    less work than training, so it is not timed); None when every parameter got one."""
    with_grad, want = gradients(ready["model"])
    if len(with_grad) == want:
        return None
    named = f" ({', '.join(with_grad)})" if 0 < len(with_grad) <= 4 else ""
    return rec.record(name, variant, batch, baseline=variant == "fp32", grads_with=len(with_grad), grads_total=want,
                      failed=f"its backward pass gave {len(with_grad)} of {want} trainable parameters a gradient"
                             f"{named}", first_step_s=ready["first_step_s"], **common)


def _record_step(rec, name, variant, ready, timing, batch, reference, held_out, device, common,
                 flops_per_item=None, ceilings=None, scored=True) -> dict:
    """One timed training-step row, with the held-out logits checked against eager fp32's (and their accuracy
    where the weights were trained: `scored`; a random-weight model's row says 'random, speed only'), and, given
    the forward FLOPs per image, the training FLOP/s (3 x forward: the backward pass costs about twice the forward) against the
    measured ceiling of the variant's precision."""
    from vitlab.results import correctness
    from vitlab import ipex as ipex_guard
    from vitlab.timing import Ceiling, flop_fields
    _, want = gradients(ready["model"])
    # lr 0 kept the trained weights: predict the held-out set (eval mode; a compiled model compiles once more)
    try:
        predicted, truth = predict(ready["model"], held_out, device, ready["amp"])
    except RuntimeError as error:  # trained here, but cannot predict: a failed row, not a traceback
        return rec.record(name, variant, batch, baseline=variant == "fp32", first_step_s=ready["first_step_s"],
                          failed=f"its held-out prediction failed: {ipex_guard.failure(error)}", **common)
    extra = {}
    if flops_per_item and ceilings:
        precision = common.get("precision", "fp32")
        ceiling = ceilings.get(precision) or Ceiling(None, f"no measured ceiling for {precision}")
        extra = flop_fields(3 * flops_per_item, batch, timing.median_ms, ceiling)
        extra["flops_basis"] = "training = 3 x forward FLOPs (torch.utils.flop_counter)"
    return rec.record(name, variant, batch, timing=timing, baseline=variant == "fp32", engaged=ready["engaged"],
                      compile_s=ready["first_step_s"] if variant == "torch.compile" else None,
                      correct=correctness(predicted, reference), reason=ready["reason"],
                      **({"accuracy": float((predicted.argmax(-1) == truth).float().mean())} if scored
                         else {"weights": "random, speed only"}),
                      first_step_s=ready["first_step_s"], grads_with=want, grads_total=want, **extra, **common)


def compare_steps(rec, name: str, trained_model: nn.Module, make_step, images, labels, held_out, device="cpu", *,
                  variants=STEP_VARIANTS, budget_s: float | None = None, rounds: int = 6, passes: int = 1,
                  warmup: int = 5, iters: int = 30, dataset: str = "", flops_per_item: float | None = None,
                  ceilings: dict | None = None, skipped: dict[str, str] | None = None, **fields) -> list[dict]:
    """Every training-step variant of `trained_model` on one batch: first steps apart, then interleaved rounds, then one
    row each ('fp32' the baseline): IPEX variants skipped where IPEX is absent, those in `skipped` (variant -> why,
    e.g. a preset that compiles one model only) skipped with their reason, errors and gradient-less backward
    passes as failed rows (untimed), timed rows with their held-out correctness and accuracy (and, given the forward
    FLOPs per image and the measured `ceilings` per precision, training FLOP/s against them)."""
    from vitlab import ipex as ipex_guard
    from vitlab.timing import interleaved
    reference, _ = predict(trained_model, held_out, device)  # eager fp32 logits
    scored = not str(getattr(trained_model, "vitlab_weights", "")).startswith("random")  # labels mean something
    rows, ready, batch = [], {}, len(images)
    common = lambda variant: dict(kind="training step", dataset=dataset, **_STEP_FIELDS.get(variant, {}), **fields)
    for variant in variants:
        no_ipex = common(variant).get("runtime") == "ipex" and not ipex_guard.available()
        why = ipex_guard.status() if no_ipex else (skipped or {}).get(variant)
        if why:  # IPEX absent, or left out by the caller: a skipped row with its reason
            rows.append(rec.record(name, variant, batch, skipped=why, **common(variant)))
            continue
        try:
            step = first_step(variant, trained_model, make_step, images, labels, device)
        except Exception as error:  # a variant that cannot run here is a result too
            rows.append(rec.record(name, variant, batch, baseline=variant == "fp32",
                                   failed=ipex_guard.failure(error), **common(variant)))
            continue
        cut = _cut_backward(rec, name, variant, step, batch, common(variant))
        if cut is None:
            ready[variant] = step
        else:
            rows.append(cut)
    timings = interleaved({v: r["step"] for v, r in ready.items()}, images, labels, device=device, rounds=rounds,
                          passes=passes, warmup=warmup, iters=iters, first_call=False, budget_s=budget_s,
                          baseline="fp32")
    for variant, r in ready.items():
        rows.append(_record_step(rec, name, variant, r, timings[variant], batch, reference, held_out, device,
                                 common(variant), flops_per_item, ceilings, scored))
    order = {v: i for i, v in enumerate(variants)}
    return sorted(rows, key=lambda row: order.get(row["variant"], len(order)))


def compile_skipped(name: str, compiled, preset: str, failed_here: list[dict] | None = None) -> dict[str, str]:
    """compare_steps' `skipped` for a model a preset does not compile: {} where `name` is in `compiled`, else the
    torch.compile variant with the reason its row says. `failed_here`: this process's earlier step rows; where this
    process imported IPEX and a compiled step failed among them, the next model's is not compiled again here (the
    cause, IPEX's layer_norm without an autograd formula, is the process's, not the model's; a cold compile that
    fails costs half a minute at 224 px on 2 cores): the fresh process of section 7 compiles ViT-B/16 instead."""
    failed = [r for r in failed_here or [] if r.get("variant") == "torch.compile" and status_of(r) == "failed"]
    if name in compiled and failed and ipex_imported():
        return {"torch.compile": f"a compiled step already failed in this process ({failed[0]['model']}, IPEX "
                                 "imported: section 7); the fresh process below compiles ViT-B/16 instead"}
    if name in compiled:
        return {}
    which = f"the training step of {', '.join(compiled)} only" if compiled else "no training step"
    return {"torch.compile": f"the {preset} preset compiles {which} (cold compiles are its largest cost); the full"
                             f" preset compiles every model"}


def emulated_bf16_skipped(device="cpu") -> dict[str, str]:
    """compare_steps' `skipped` for the bf16 variants where bf16 is emulated (an AVX2-only CPU): {} where it is native.
    At the seed's 224 px an emulated step costs several fp32 steps; the 32-px steps measure the emulation."""
    from vitlab import optimize
    native, why = optimize.bf16_note(device)
    if native:
        return {}
    return {variant: f"{why}; skipped at 224 px, where emulated steps cost minutes (the 32-px steps measure it)"
            for variant, fields in _STEP_FIELDS.items() if fields.get("precision") == "bf16"}


def gradient_check(row: dict) -> str:
    """One phrase for a training-step row's gradient check (its grads_with / grads_total fields), for the prose."""
    from vitlab.results import status_of
    from vitlab.contract.text import shorten
    got, want = row.get("grads_with"), row.get("grads_total")
    if want is None:
        return f"no gradients to check ({status_of(row)}: {shorten(row.get('reason') or '', 90)})"
    return f"all {want} trainable parameters got a gradient" if got == want else \
        f"only {got} of {want} trainable parameters got a gradient (a failed row)"


def step_table(rows: list[dict], accuracy: bool = True):
    """compare_steps' rows as one compact Markdown table: speed against the model's fp32 row, verdict, correctness
    (`accuracy=False`: without the held-out accuracy column, for models whose weights are random)."""
    from vitlab.contract.findings import findings
    from vitlab.results import status_of
    from vitlab.contract.text import markdown_table
    judged = {id(f.row): f for f in findings(rows)}
    table = []
    for r in rows:
        found = judged.get(id(r))
        interval = found and found.interval
        table.append({"model": r["model"], "variant": r["variant"], "images/s": r.get("throughput"),
                      "× fp32": None if found is None else found.ratio,
                      "95% interval": f"{interval.low:.2f}–{interval.high:.2f}" if interval else None,
                      "verdict": "baseline" if found is None else found.verdict,
                      "of ceiling": r.get("ceiling_fraction"),
                      "first step s": r.get("first_step_s"),
                      "grads": None if r.get("grads_total") is None else f"{r['grads_with']}/{r['grads_total']}",
                      "top-1 vs fp32": r.get("top1_agreement"), "held-out": r.get("accuracy"),
                      "status": status_of(r), "note": r.get("reason")})
        if not accuracy:
            del table[-1]["held-out"]
    return markdown_table(table, {"images/s": ".1f", "× fp32": ".2f", "of ceiling": ".0%", "first step s": ".1f",
                                  "top-1 vs fp32": ".0%", "held-out": ".1%"}, limit=60)


# ---- Why a compiled training step breaks with IPEX imported: the smallest cases -------------------------------------

class _AttentionThenNorm(nn.Module):
    """A transformer block's shape in miniature: attention (SDPA), then LayerNorm; or LayerNorm first."""

    def __init__(self, norm_first: bool = False):
        super().__init__()
        self.qkv, self.norm, self.norm_first = nn.Linear(16, 48), nn.LayerNorm(16), norm_first

    def forward(self, x):
        x = self.norm(x) if self.norm_first else x
        q, k, v = self.qkv(x).view(1, 8, 3, 2, 8).permute(2, 0, 3, 1, 4)
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(1, 8, 16)
        return out.sum() if self.norm_first else self.norm(out).sum()


PROBES = {  # case -> (LayerNorm first?, SDPA backend: None = the CPU default, flash attention)
    "LayerNorm, then attention": (True, None),
    "attention, then LayerNorm": (False, None),
    "attention (math SDPA), then LayerNorm": (False, "MATH"),
}


def compiled_backward_probe(case: str) -> dict:
    """One compiled forward + backward of a PROBES case in this process: did it raise, and how many of its
    parameters got a gradient (with IPEX imported, its LayerNorm kernel has no autograd formula)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from vitlab.contract.text import first_line
    norm_first, backend = PROBES[case]
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = _AttentionThenNorm(norm_first)
    import contextlib
    chosen = sdpa_kernel(getattr(SDPBackend, backend)) if backend else contextlib.nullcontext()
    try:
        with chosen:
            torch.compile(model)(torch.randn(1, 8, 16, requires_grad=True)).backward()
    except Exception as error:  # the failure is the finding
        return {"case": case, "outcome": "raised", "error": first_line(error, 300), "grads_with": None,
                "grads_total": len(list(model.parameters()))}
    with_grad, total = gradients(model)
    return {"case": case, "outcome": "ran", "error": "", "grads_with": len(with_grad), "grads_total": total}


def probe_said(found: dict) -> str:
    """A compiled_backward_probe result as the end of a sentence: 'raised TypeError: …' or 'ran; 2 of 4 parameters
    got a gradient'."""
    if found["outcome"] == "raised":
        return f"raised {found['error']}"
    return f"ran; {found['grads_with']} of {found['grads_total']} parameters got a gradient"


def probe_sentence(found: dict, ipex_loaded: bool) -> str:
    """The sentence on the smallest failing case (attention, then LayerNorm; `found`: its compiled_backward_probe
    result): the failure itself where IPEX is imported, the same case as a control where it is not."""
    if ipex_loaded:
        return f"The smallest case of the failure with IPEX imported, attention followed by LayerNorm, compiled: " \
               f"{probe_said(found)}."
    return f"Without IPEX, the smallest case of that failure (attention followed by LayerNorm) compiled as a " \
           f"control: {probe_said(found)}."


def fresh_sentence(found, ipex_loaded: bool) -> str:
    """The sentence on the advice, measured: the compiled step in a process that never imported IPEX (`found`: that
    process's torch.compile against its own eager fp32, or None)."""
    if not ipex_loaded:
        return "IPEX is not loaded on this stack, so that step already ran without it."
    if found is None:
        return "The fresh process that never imports IPEX reported no compiled step (see its cell)."
    return (f"In a fresh process that never imported IPEX, the same compiled step was {found.said()}, "
            f"and {gradient_check(found.row)}.")
