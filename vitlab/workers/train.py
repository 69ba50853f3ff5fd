"""Training in a fresh interpreter: the processes chapter 01 (and `vitlab.train.trained`) start.

    python -m vitlab.workers.train NAME DATASET RECIPE_JSON DEVICE
        train one digits model and save its weights (`trained()` runs this when IPEX is imported in the caller:
        IPEX swaps in its own CPU LayerNorm kernel, so weights trained there would depend on the caller's imports);
    python -m vitlab.workers.train steps --model vit-b16 --batch 4 --budget-s 20 --rows FILE ...
        time eager fp32 against torch.compile training steps at 224 px in a process that never imports IPEX
        (the advice chapter 01 gives, measured), its rows written to FILE.

Worker side: `main`; caller side: `launch_steps` (runs it) and `record_steps` (adopts its rows).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def steps_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m vitlab.workers.train steps")
    parser.add_argument("--model", required=True)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--budget-s", type=float, required=True)
    parser.add_argument("--rows", type=Path, required=True)
    parser.add_argument("--notebook", required=True)
    parser.add_argument("--preset", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--git-sha", default=None)
    args = parser.parse_args(argv)
    import torch
    from vitlab.chapter import quiet_known_messages, steady_allocator
    from vitlab.models import build
    from vitlab.results import Recorder
    from vitlab.train import compare_steps, make_train_step, seed_shape_batch
    steady_allocator()
    quiet_known_messages()
    torch.manual_seed(0)
    device = torch.device("cpu")
    images, labels, dataset = seed_shape_batch(args.batch)
    rec = Recorder(args.notebook, device, args.preset, args.rows, args.run_id, args.git_sha)
    compare_steps(rec, args.model, build(args.model, num_classes=10), make_train_step, images, labels,
                  [(images, labels)], device, variants=("fp32", "torch.compile"), budget_s=args.budget_s, warmup=2,
                  dataset=dataset, group="without IPEX", imports_ipex=False)


def launch_steps(rec, model: str, batch: int, budget_s: float, timeout: float = 1800) -> tuple[list[dict], str]:
    """Run `steps` in a fresh interpreter that never imports IPEX, with AOTAutograd's on-disk cache off (a process
    that mixed IPEX and compile may have cached a cut backward graph): (its rows, why it failed or "")."""
    with tempfile.TemporaryDirectory() as scratch:
        rows = Path(scratch) / "rows.jsonl"
        command = [sys.executable, "-m", "vitlab.workers.train", "steps", "--model", model, "--batch", str(batch),
                   "--budget-s", str(budget_s), "--rows", str(rows), "--notebook", rec.notebook,
                   "--preset", rec.preset, "--run-id", rec.run_id] + (["--git-sha", rec.git_sha] if rec.git_sha else [])
        env = dict(os.environ, TORCHINDUCTOR_AUTOGRAD_CACHE="0")
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
        from vitlab.contract.store import load_file
        found = load_file(rows) if rows.exists() else []
    why = "" if done.returncode == 0 else (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    return found, why


def record_steps(rec, rows: list[dict]) -> list[dict]:
    """The worker's rows, kept as this chapter's own (appended to its recorder's file and rows)."""
    for row in rows:
        rec.adopt(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["steps"]:
        return steps_main(argv[1:])
    from vitlab.train import save_weights, train_recipe, weights_path
    name, dataset, recipe, device = argv[:4]
    model, _, _ = train_recipe(name, dataset, json.loads(recipe), device)
    save_weights(model.cpu(), weights_path(name, dataset), json.loads(recipe))


if __name__ == "__main__":
    main()
