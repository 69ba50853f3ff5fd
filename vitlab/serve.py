"""One serving instance: the trained digits ViT (fp32, PT2E INT8 or IPEX INT8), timed, one JSON line per batch.

    python -m torch.backends.xeon.run_cpu --ncores-per-instance 1 --ninstances 2 --no-python \
        python -m vitlab.serve --model fp32 pt2e-int8 --batch 1 64 --iters 30 6 --barrier DIR --instances 2

INT8 models are quantized in this process (calibrated on training images). Several --model kinds are built
and timed one after the other in the same process (one launch serves them all). Every model and batch shape
runs once before any timing (compiles happen there); with --barrier, the instances then wait for each other
before each (model, batch) timing, so their timed windows overlap and their throughputs add up.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

KINDS = ("fp32", "pt2e-int8", "ipex-int8")


def build(kind: str, weights: str | None = None, calibration_images: int = 256):
    """(inference function, why) for `kind`, or (None, why) when its recipe did not engage here. Weights come
    from `weights` (a vitlab.train.save_weights file: concurrent instances never retrain), else train.trained."""
    import torch
    from vitlab import data, models, optimize, train
    if weights:
        from safetensors.torch import load_model
        model = models.build("vit-32px")
        load_model(model, weights)
    else:
        model = train.trained("vit-32px", "digits")  # before IPEX is imported (see train.trained)
    applied = optimize.Applied(model.eval(), True, "eager fp32")
    if kind != "fp32":
        images = data.classification_data(32, "digits").train.dataset.tensors[0]
        calibration = list(images[:calibration_images].split(32))
        applied = (optimize.pt2e_int8(model, calibration[0][:1], calibration) if kind == "pt2e-int8"
                   else optimize.ipex_int8(model, calibration, calibration[0][:1]))
    if not applied.engaged:
        return None, applied.reason
    return (lambda x: applied.model(x)), applied.reason


def barrier(folder: str | None, instances: int, tag: str, timeout_s: float = 600) -> None:
    """Wait until `instances` processes have reached `tag` (one file each in `folder`)."""
    if not folder:
        return
    Path(folder, f"{tag}-{os.getpid()}").touch()
    deadline = time.monotonic() + timeout_s
    while len(list(Path(folder).glob(f"{tag}-*"))) < instances:
        if time.monotonic() > deadline:
            raise TimeoutError(f"barrier {tag!r}: fewer than {instances} instances arrived in {timeout_s:.0f} s")
        time.sleep(0.005)


def main(argv: list[str] | None = None) -> list[dict]:
    from vitlab.chapter import steady_allocator
    steady_allocator()  # as in the chapters' own process: freed buffers stay mapped between calls
    parser = argparse.ArgumentParser(prog="python -m vitlab.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=KINDS, nargs="+", default=["fp32"], help="one or more, timed in turn")
    parser.add_argument("--weights", help="a .safetensors file of the digits ViT (default: vitlab.train.trained)")
    parser.add_argument("--batch", type=int, nargs="+", default=[1])
    parser.add_argument("--iters", type=int, nargs="+", default=[20], help="timed calls per batch (one: for all)")
    parser.add_argument("--rounds", type=int, default=3, help="timed in rounds: their spread is the noise band")
    parser.add_argument("--barrier", help="a folder shared by the instances of one launch")
    parser.add_argument("--instances", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="one JSON line per batch (the only output format)")
    args = parser.parse_args(argv)
    if len(args.iters) not in (1, len(args.batch)):
        parser.error(f"--iters takes one count or one per batch ({len(args.batch)}), got {len(args.iters)}")
    import torch
    from vitlab.timing import interleaved
    built = {kind: build(kind, args.weights) for kind in dict.fromkeys(args.model)}
    found = {"pid": os.getpid(), "threads": torch.get_num_threads(),
             "cores": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None}
    inputs = {batch: torch.randn(batch, 3, 32, 32, generator=torch.Generator().manual_seed(0)) for batch in args.batch}
    iters = args.iters * len(args.batch) if len(args.iters) == 1 else args.iters
    lines = []
    with torch.no_grad():
        for run, _ in built.values():  # every model and shape once (a compiled model compiles here) before timing
            for x in inputs.values() if run else ():
                run(x)
        for kind, (run, why) in built.items():
            if run is None:
                lines += [{"model": kind, **found, "batch": batch, "skipped": why} for batch in args.batch]
                continue
            for batch, n in zip(args.batch, iters):
                barrier(args.barrier, args.instances, f"{kind}-batch{batch}")
                start = time.time()
                t = interleaved({kind: run}, inputs[batch], rounds=args.rounds, warmup=1, iters=n)[kind]
                lines.append({"model": kind, **found, "batch": batch, "median_ms": t.median_ms, "p90_ms": t.p90_ms,
                              "iters": len(t.samples_ms), "throughput": t.throughput(batch), "spread": t.spread,
                              "start": start, "end": time.time(), "reason": why})
    for line in lines:  # one write per line: instances share the launcher's pipe, and under PYTHONUNBUFFERED
        sys.stdout.write(json.dumps(line) + "\n")  # print() writes the text and its newline apart, so two
        sys.stdout.flush()                          # instances' lines could interleave; a write this short is atomic
    return lines


if __name__ == "__main__":
    main()
