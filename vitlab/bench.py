"""The shared harness: time variants in interleaved rounds, check them against eager fp32, record their rows.

    variants = [bench.Variant("eager fp32", model), bench.Variant("compile", torch.compile(model)),
                bench.Variant.skip("IPEX int8", why)]
    rows = bench.compare(run.rec, "vit-b16", variants, x, reference=logits, baseline="eager fp32")

A chapter writes the recipe (how each variant is made); this module does the bookkeeping every chapter
shares: the rounds, the correctness fields, the row per variant (skipped and failed variants as rows without a
timing), the FLOP/s against a measured ceiling.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from vitlab.results import Recorder, correctness
from vitlab.contract.text import first_line
from vitlab.timing import Ceiling, InterleavedTiming, flop_fields, interleaved


@dataclass
class Variant:
    """One way to run the model: a callable (inputs -> logits) or the reason it cannot run here."""

    name: str
    fn: Callable[..., Any] | None = None
    engaged: bool = True
    reason: str = ""
    compile_s: float | None = None      # what it cost to get `fn` (compile, convert, load), when the caller timed it
    skipped: str | None = None          # the tool is missing here: why
    failed: str | None = None           # it ran and did not work: why
    fields: dict = field(default_factory=dict)  # structured row fields: precision, runtime, method, mode, ...

    @classmethod
    def skip(cls, name: str, why: str, **fields) -> "Variant":
        return cls(name, skipped=why, fields=fields)

    @classmethod
    def fail(cls, name: str, why: str, **fields) -> "Variant":
        return cls(name, failed=why, fields=fields)

    @property
    def live(self) -> bool:
        return self.fn is not None and not self.skipped and not self.failed


def build(name: str, make: Callable[[], Callable[..., Any]], *example, **fields) -> Variant:
    """A Variant from `make()` (which returns the callable), timed to its first answer on `example` as compile_s;
    an exception becomes a failed variant whose reason is the error's first line."""
    start = time.perf_counter()
    try:
        fn = make()
        if example:
            fn(*example)
    except Exception as error:  # a recipe this machine cannot run: a row that says why, not a traceback
        return Variant.fail(name, first_line(error), **fields)
    return Variant(name, fn, compile_s=round(time.perf_counter() - start, 3), fields=fields)


def inference(module: torch.nn.Module, bf16: bool = False, device_type: str = "cpu") -> Callable[..., Any]:
    """A module as an inference function: no_grad, bf16 autocast when asked, fp32 logits out."""
    def run(x):
        with torch.no_grad(), torch.autocast(device_type, dtype=torch.bfloat16, enabled=bf16):
            return module(x).float()
    return run


def logits_of(fn: Callable[..., Any], inputs: torch.Tensor, batch: int) -> torch.Tensor:
    """`fn`'s logits for all `inputs` in calls of exactly `batch` (the last zero-padded: one shape per variant)."""
    outs = []
    for chunk in inputs.split(batch):
        pad = chunk.new_zeros(batch - len(chunk), *chunk.shape[1:])
        outs.append(fn(torch.cat([chunk, pad]))[: len(chunk)])
    return torch.cat(outs)


def score(fn: Callable[..., Any], inputs: torch.Tensor, reference: torch.Tensor, batch: int,
          labels: torch.Tensor | None = None) -> dict:
    """Correctness of `fn` over held-out `inputs`: max-abs diff and top-1 agreement with `reference` (eager fp32
    logits of the same inputs), and accuracy where `labels` exist."""
    logits = logits_of(fn, inputs, batch)
    found = correctness(logits, reference)
    if labels is not None:
        found["accuracy"] = float((logits.argmax(-1) == labels).float().mean())
    return found


def time_variants(variants: list[Variant], x, *, budget_s: float | None = None, rounds: int = 6, warmup: int = 5,
                  iters: int = 30, passes: int = 1, device: torch.device | str = "cpu",
                  baseline: str | None = None) -> dict[str, InterleavedTiming]:
    """The live variants timed on `x` in interleaved rounds (a noisy spell hits all of them alike): sized to
    `budget_s` seconds when given (vitlab.timing.plan_rounds), else `iters` calls over `rounds` rounds; a variant
    still undecided against `baseline` (default: the first) gets more rounds (vitlab.timing.interleaved)."""
    live = {v.name: v.fn for v in variants if v.live}
    if not live:
        return {}
    return interleaved(live, x, rounds=rounds, warmup=warmup, iters=iters, passes=passes, device=device,
                       budget_s=budget_s, baseline=baseline)


def record(rec: Recorder, model: str, variants: list[Variant], timings: dict[str, InterleavedTiming], batch: int, *,
           baseline: str, reference: torch.Tensor | None = None, scores: dict[str, dict] | None = None,
           flops_per_item: float | None = None, ceilings: dict[str, Ceiling] | None = None,
           peaks: dict[str, float | None] | None = None, **fields) -> list[dict]:
    """One row per variant: timed ones with their correctness (from `scores`, else their last output against
    `reference`) and FLOP/s against the ceiling of their `precision` field (and the nominal peak of that precision,
    where `peaks` gives one); skipped and failed ones untimed."""
    rows = []
    for v in variants:
        common = dict(fields, **v.fields)
        if not v.live:
            rows.append(rec.record(model, v.name, batch, skipped=v.skipped, failed=v.failed, **common))
            continue
        t = timings[v.name]
        correct = (scores or {}).get(v.name)
        if correct is None and reference is not None:
            correct = correctness(t.output, reference)
        extra = {}
        if flops_per_item and ceilings:
            precision = common.get("precision", "fp32")
            ceiling = ceilings.get(precision) or Ceiling(None, f"no measured ceiling for {precision}")
            extra = flop_fields(flops_per_item, batch, t.median_ms, ceiling, (peaks or {}).get(precision))
        rows.append(rec.record(model, v.name, batch, t, baseline=v.name == baseline, correct=correct,
                               engaged=v.engaged, reason=v.reason, compile_s=v.compile_s, **extra, **common))
    return rows


def compare(rec: Recorder, model: str, variants: list[Variant], x, *, baseline: str, reference=None,
            scores: dict[str, dict] | None = None, budget_s: float | None = None, rounds: int = 6, warmup: int = 5,
            iters: int = 30, passes: int = 1, flops_per_item: float | None = None,
            ceilings: dict[str, Ceiling] | None = None, **fields) -> list[dict]:
    """time_variants then record: the variants on `x` (batch = len(x)), one row each, `baseline` marked."""
    if baseline not in {v.name for v in variants if v.live}:
        raise ValueError(f"baseline {baseline!r} is not among the live variants: {[v.name for v in variants if v.live]}")
    timings = time_variants(variants, x, budget_s=budget_s, rounds=rounds, warmup=warmup, iters=iters, passes=passes,
                            device=rec.device, baseline=baseline)
    return record(rec, model, variants, timings, len(x), baseline=baseline, reference=reference, scores=scores,
                  flops_per_item=flops_per_item, ceilings=ceilings, **fields)
