"""One serving instance: the trained digits ViT (fp32, PT2E INT8 or IPEX INT8), timed, one JSON line per batch.

    python -m torch.backends.xeon.run_cpu --ncores-per-instance=1 --ninstances=2 --no-python \
        python -m vitlab.workers.serve --model fp32 pt2e-int8 --batch 1 64 --budget-s 2 --barrier DIR --instances 2

(`launch` builds and runs that command, from the caller's side, and returns the parsed lines.)

INT8 models are quantized in this process, calibrated on the first --calibration-images training images in
batches of 32 (pass the chapter's own count, so the served model is the one the chapter scored); with --accuracy
each model is scored on the held-out digits first and every line carries its `accuracy`. Several --model kinds are built
and timed one after the other in the same process (one launch serves them all). Every model and batch shape
runs once before any timing (compiles happen there); with --barrier, the instances then wait for each other
before each (model, batch) timing, so their timed windows overlap and their throughputs add up. With --budget-s
each (model, batch) gets that many seconds of timed calls, sized by calibration; the number of rounds stays fixed
(--rounds), so every instance's round k lines up with the others' (round_fields).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

KINDS = {"fp32": "fp32", "pt2e-int8": "int8", "ipex-int8": "int8"}  # kind -> the precision it computes in


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


def accuracy(run, batch: int) -> float:
    """Top-1 of `run` on the held-out digits, called in batches of exactly `batch` (a shape already compiled)."""
    from vitlab.bench import logits_of
    from vitlab.data import classification_data
    images, labels = classification_data(32, "digits").test.dataset.tensors
    return float((logits_of(run, images, batch).argmax(-1) == labels).float().mean())


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
    parser = argparse.ArgumentParser(prog="python -m vitlab.workers.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=KINDS, nargs="+", default=["fp32"], help="one or more, timed in turn")
    parser.add_argument("--weights", help="a .safetensors file of the digits ViT (default: vitlab.train.trained)")
    parser.add_argument("--batch", type=int, nargs="+", default=[1])
    parser.add_argument("--iters", type=int, nargs="+", default=[20], help="timed calls per batch (one: for all)")
    parser.add_argument("--budget-s", type=float, nargs="+", help="seconds of timed calls per batch (one: for all); "
                        "sized by calibration, replaces --iters")
    parser.add_argument("--rounds", type=int, default=10, help="timed in rounds: the verdicts judge their medians")
    parser.add_argument("--barrier", help="a folder shared by the instances of one launch")
    parser.add_argument("--instances", type=int, default=1)
    parser.add_argument("--calibration-images", type=int, default=256, help="training images INT8 calibrates on")
    parser.add_argument("--accuracy", action="store_true", help="score each model on the held-out digits first")
    parser.add_argument("--json", action="store_true", help="one JSON line per batch (the only output format)")
    args = parser.parse_args(argv)
    for name, given in (("--iters", args.iters), ("--budget-s", args.budget_s or [0])):
        if len(given) not in (1, len(args.batch)):
            parser.error(f"{name} takes one value or one per batch ({len(args.batch)}), got {len(given)}")
    if args.budget_s and min(args.budget_s) <= 0:
        parser.error(f"--budget-s must be positive, got {args.budget_s}")
    import torch
    from vitlab.timing import calibrate, interleaved, plan_rounds
    built = {kind: build(kind, args.weights, args.calibration_images) for kind in dict.fromkeys(args.model)}
    found = {"pid": os.getpid(), "threads": torch.get_num_threads(),
             "cores": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None}
    inputs = {batch: torch.randn(batch, 3, 32, 32, generator=torch.Generator().manual_seed(0)) for batch in args.batch}
    iters = args.iters * len(args.batch) if len(args.iters) == 1 else args.iters
    budgets = (args.budget_s or [None]) * (len(args.batch) if len(args.budget_s or [0]) == 1 else 1)
    lines = []
    with torch.no_grad():
        for run, _ in built.values():  # every model and shape once (a compiled model compiles here) before timing
            for x in inputs.values() if run else ():
                run(x)
        scored = {kind: accuracy(run, max(args.batch)) for kind, (run, _) in built.items() if run and args.accuracy}
        for kind, (run, why) in built.items():
            if run is None:
                lines += [{"model": kind, **found, "batch": batch, "skipped": why} for batch in args.batch]
                continue
            for batch, n, budget in zip(args.batch, iters, budgets):
                barrier(args.barrier, args.instances, f"{kind}-batch{batch}")
                start, rewarm = time.time(), 1
                if budget:  # calls per round sized to the budget; the rounds stay fixed, so instances line up
                    _, per_call, _ = calibrate({kind: run}, inputs[batch], warmup=3, warmup_s=budget / 10,
                                               first_call=False)
                    _, per_round, rewarm = plan_rounds(per_call, budget, args.rounds, args.rounds)
                    n = per_round * args.rounds
                t = interleaved({kind: run}, inputs[batch], rounds=args.rounds, warmup=1, iters=n, rewarm=rewarm,
                                first_call=False)[kind]
                lines.append({"model": kind, **found, "batch": batch, "median_ms": t.median_ms, "p90_ms": t.p90_ms,
                              "iters": len(t.samples_ms), "throughput": t.throughput(batch), "spread": t.spread,
                              "round_medians_ms": t.round_medians_ms, "rounds": len(t.round_medians_ms),
                              "host_busy": t.host_busy,
                              **({"budget_s": budget} if budget else {}),
                              "start": start, "end": time.time(), "reason": why,
                              **({"accuracy": scored[kind]} if kind in scored else {})})
    for line in lines:  # one write per line: instances share the launcher's pipe, and under PYTHONUNBUFFERED
        sys.stdout.write(json.dumps(line) + "\n")  # print() writes the text and its newline apart, so two
        sys.stdout.flush()                          # instances' lines could interleave; a write this short is atomic
    return lines


def command(weights: str, instances: int, cores_each: int, kinds, batches, *, budget_s: float,
            calibration_images: int, barrier_dir: str, accuracy: bool = True, python: str = sys.executable
            ) -> list[str]:
    """The `torch.backends.xeon.run_cpu` command line that starts `instances` workers pinned to `cores_each`
    cores each. Its options are given with '=': torch 2.14's --ncores-per-instance takes a list, and would
    swallow the next word otherwise. `--no-python` and the whole command: its -m accepts only '.py' programs."""
    return [python, "-m", "torch.backends.xeon.run_cpu", "--use-logical-core", "--no-python",
            f"--ninstances={instances}", f"--ncores-per-instance={cores_each}",
            python, "-m", "vitlab.workers.serve", "--model", *kinds, "--weights", str(weights),
            "--calibration-images", str(calibration_images), *(["--accuracy"] if accuracy else []), "--json",
            "--batch", *map(str, batches), "--budget-s", str(budget_s),
            "--barrier", str(barrier_dir), "--instances", str(instances)]


def parse(stdout: str) -> list[dict]:
    """The workers' JSON lines in the launcher's output (its own log lines and anything else skipped)."""
    lines = []
    for text in stdout.splitlines():
        if text.startswith("{"):
            try:
                lines.append(json.loads(text))
            except json.JSONDecodeError:  # a line cut short (a worker killed mid-write) is not evidence
                continue
    return lines


def launcher_error(returncode: int, stderr: str) -> str:
    """'' when the launch succeeded, else the last line of its stderr (or its exit status)."""
    if returncode == 0:
        return ""
    return (stderr.strip().splitlines() or [f"exit {returncode}"])[-1]


def launch(weights: str, instances: int, cores_each: int, kinds, batches, *, budget_s: float,
           calibration_images: int, barrier_dir: str, timeout_s: float = 1800) -> tuple[list[dict], str]:
    """Run `command(...)` and wait: (the workers' JSON lines, the launcher's error or '')."""
    done = subprocess.run(command(weights, instances, cores_each, kinds, batches, budget_s=budget_s,
                                  calibration_images=calibration_images, barrier_dir=barrier_dir),
                          capture_output=True, text=True, timeout=timeout_s)
    return parse(done.stdout), launcher_error(done.returncode, done.stderr)


def round_fields(lines: list[dict], batch: int) -> dict:
    """Per-round evidence of one launch's instances: each round's slowest instance (latency) and the instances'
    summed items per second (throughput); instances time their rounds side by side, between the same barriers."""
    rounds = [line.get("round_medians_ms") or [] for line in lines]
    if not rounds or len({len(r) for r in rounds}) != 1 or not rounds[0]:
        return {}
    per_round = list(zip(*rounds))
    return {"round_medians_ms": [round(max(r), 4) for r in per_round],
            "round_throughputs": [round(sum(batch * 1000.0 / m for m in r), 3) for r in per_round]}


def host_busy(lines: list[dict]) -> dict:
    """The most CPU other programs took while any instance timed (its instances are not "other")."""
    busy = [line["host_busy"] for line in lines if line.get("host_busy") is not None]
    return {"host_busy": max(busy)} if busy else {}


def layout(instances: int, cores_each: int) -> str:
    """A serving layout in words: '1 instance of 2 cores', '2 instances of 1 core'."""
    from vitlab.contract.text import counted
    return f"{counted(instances, 'instance')} of {counted(cores_each, 'core')}"


def record(rec, lines: list[dict], instances: int, cores_each: int, kinds, batches, *, baseline: bool,
           launcher_error: str = "", judged_by: str | dict | None = None, control: bool = False) -> list[dict]:
    """One row per model kind and batch of one launch: the slowest instance's latency, the sum of the instances'
    throughputs and (with --accuracy) the served model's accuracy; a kind that did not run on every instance is a
    skipped row that says why (a launch that printed nothing still gets its rows; when the launcher itself failed,
    `launcher_error` says how and the rows are failed rows). `baseline`: this launch's fp32 rows are the serving
    baseline. `control`: this launch is the baseline's layout launched again, after the others; its rows, named
    "... (re-timed)", are the group's control (vitlab.contract.findings: how far the machine moved between
    launches widens every serving interval). `judged_by` ("latency" or "throughput", or a mapping batch -> either):
    what the chapter judges these rows on (default, and for a batch the mapping leaves out: latency at batch 1 in
    one instance, throughput otherwise)."""
    rows = []
    for kind in kinds:
        for batch in batches:
            by = judged_by.get(batch) if isinstance(judged_by, dict) else judged_by
            mine = [line for line in lines if line["model"] == kind and line["batch"] == batch]
            fields = dict(group="serving", instances=instances, cores_per_instance=cores_each, runtime="serve",
                          precision=KINDS[kind], method=kind, label=f"{kind} in {layout(instances, cores_each)}",
                          **({"control": True} if control else {}))
            variant = f"serve {kind} {instances}x{cores_each}" + (" (re-timed)" if control else "")
            why = (mine[0].get("skipped") if mine else None) or (
                None if len(mine) == instances else f"{len(mine)} of {instances} instances reported")
            if why and not mine and launcher_error:
                rows.append(rec.record("vit-32px", variant, batch, failed=f"the launcher failed: {launcher_error}",
                                       **fields))
                continue
            if why:
                rows.append(rec.record("vit-32px", variant, batch, skipped=why, **fields))
                continue
            slowest = max(mine, key=lambda line: line["median_ms"])
            scored = {"accuracy": min(line["accuracy"] for line in mine)} if "accuracy" in mine[0] else {}
            rows.append(rec.record(
                "vit-32px", variant, batch, baseline=baseline and kind == "fp32" and not control, median_ms=round(slowest["median_ms"], 4),
                p90_ms=round(max(line["p90_ms"] for line in mine), 4), iters=sum(line["iters"] for line in mine),
                throughput=round(sum(line["throughput"] for line in mine), 3), spread=max(line["spread"] for line in mine),
                reason=slowest["reason"], judged_by=by, **round_fields(mine, batch), **scored, **fields,
                **({"budget_s": mine[0]["budget_s"]} if "budget_s" in mine[0] else {}),
                **host_busy(mine)))
    return rows


if __name__ == "__main__":
    main()
