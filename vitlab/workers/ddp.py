"""Data-parallel training with DistributedDataParallel (DDP), started by torchrun.

    torchrun --standalone --nproc_per_node=2 -m vitlab.workers.ddp --steps 5 --batch 32

Every process (rank) builds the same ViT, reads its own shard of the digits set
(DistributedSampler) and trains a few steps. DDP all-reduces (averages) the gradients during
backward(), so every rank applies the same update and the parameters stay identical: each rank
hashes its parameters and rank 0 prints one JSON line comparing them, with images/s per rank.

--fail-rank R --fail-step S kills rank R at step S (SIGKILL) to show that the launch then fails
fast: torchrun sees the dead worker and stops the others. With --fail-mode hang the rank gets stuck
instead; init_process_group's timeout (--timeout) then ends the collectives waiting for it.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler

from vitlab.contract.layout import BACKENDS, ON_DEVICE
from vitlab.contract.text import counted

# The collective library per device (vitlab.contract.layout.BACKENDS): gloo for CPUs, NCCL for NVIDIA (RCCL on
# ROCm builds, same name), XCCL for Intel GPUs (native since torch 2.8; torch-ccl's "ccl" is discontinued).
PROCESS_GROUP_BACKENDS = {b.device_type: b.process_group for b in BACKENDS.values() if b.process_group}
SUMMARY_PREFIX = "VITLAB_DDP_SUMMARY "


def process_group_backend(device: torch.device | str) -> str:
    """The torch.distributed backend for `device`: gloo (cpu), nccl (cuda/rocm), xccl (xpu)."""
    kind = torch.device(device).type
    if kind not in PROCESS_GROUP_BACKENDS:
        raise ValueError(f"no distributed backend for {kind!r}: DDP runs on {', '.join(PROCESS_GROUP_BACKENDS)}")
    return PROCESS_GROUP_BACKENDS[kind]


def rank_device(backend: str, local_rank: int) -> torch.device:
    """This rank's device: accelerator number LOCAL_RANK, or the CPU where the device has no process group (MPS)."""
    from vitlab.device import pick_device
    kind = pick_device(backend).type
    if ON_DEVICE[kind].process_group is None:
        kind = "cpu"
    return torch.device(kind) if kind == "cpu" else torch.device(kind, local_rank)


def label(ranks: int, threads: int, device: str = "cpu", cores: int | None = None) -> str:
    """A DDP run as a sentence names it (its row's `label`, which a finding says for the row): 'one rank of 1
    thread', 'two ranks of 1 thread each', 'one process using all 4 cores' (one rank given all `cores`; 'both
    cores' where there are 2), and on an accelerator 'two ranks on two cuda devices' (threads do not matter there)."""
    if device != "cpu":
        return f"{counted(ranks, 'rank', words=True)} on {counted(ranks, f'{device} device', words=True)}"
    if ranks == 1 and cores and cores > 1 and threads >= cores:
        return "one process using both cores" if cores == 2 else f"one process using all {cores} cores"
    return f"{counted(ranks, 'rank', words=True)} of {counted(threads, 'thread')}{' each' * (ranks > 1)}"


def parameter_hash(model: torch.nn.Module) -> str:
    """A short SHA-256 of every parameter's bytes, in order: equal hashes = bit-identical weights."""
    digest = hashlib.sha256()
    for tensor in model.parameters():
        digest.update(tensor.detach().float().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def window_spread(step_s: list[float], windows: int = 3) -> float | None:
    """The noise band of a run's rate: (max - min) / median of the median step time in `windows` equal windows."""
    import statistics

    from vitlab.timing import relative_spread
    size = len(step_s) // windows
    if size < 1:
        return None
    return round(relative_spread([statistics.median(step_s[i * size:(i + 1) * size]) for i in range(windows)]), 4)


def window_rates(step_s: list[float], batch: int, windows: int = 6) -> list[float] | None:
    """Images per second in each of `windows` equal windows of a run's step times (the verdicts' rounds: two
    launches are compared window by window, unpaired); None when there are fewer steps than windows."""
    size = len(step_s) // windows
    if size < 1:
        return None
    return [round(batch * size / sum(step_s[i * size:(i + 1) * size]), 3) for i in range(windows)]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m vitlab.workers.ddp", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="vit-32px", help="a vitlab.models preset (default vit-32px)")
    parser.add_argument("--steps", type=int, default=5, help="timed training steps per rank")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps first (DDP sets up its buckets)")
    parser.add_argument("--batch", type=int, default=32, help="images per rank per step")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--backend", default="auto", help="device: auto|cpu|cuda|xpu")
    parser.add_argument("--timeout", type=float, default=60, help="seconds a collective may wait for a peer")
    parser.add_argument("--fail-rank", type=int, default=None, help="simulate a failure of this rank ...")
    parser.add_argument("--fail-step", type=int, default=1, help="... at this step ...")
    parser.add_argument("--fail-mode", choices=("kill", "hang"), default="kill",
                        help="... by SIGKILL (a crash) or by sleeping forever (a stuck rank: --timeout ends it)")
    return parser.parse_args(argv)


def join(args) -> tuple[int, torch.device]:
    """This rank's number and device, with its process group initialised (torchrun sets RANK and LOCAL_RANK)."""
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    from vitlab.chapter import steady_allocator
    steady_allocator()  # as in the chapters' own process: freed buffers stay mapped between steps
    device = rank_device(args.backend, local_rank)
    if device.type != "cpu":
        getattr(torch, device.type).set_device(device)  # before init: NCCL/XCCL bind to this device
    dist.init_process_group(process_group_backend(device), timeout=datetime.timedelta(seconds=args.timeout))
    return rank, device


def train_steps(args, rank: int, device: torch.device) -> dict:
    """Warm-up steps, then `args.steps` timed steps, all ranks together: this rank's measurements."""
    from vitlab.data import classification_data
    from vitlab.device import synchronize
    from vitlab.models import build
    torch.manual_seed(0)  # same initial weights everywhere (DDP also broadcasts rank 0's at wrap time)
    model = build(args.model).to(device).train()
    model = DistributedDataParallel(model, device_ids=None if device.type == "cpu" else [device])
    dataset = classification_data(32, "digits").train.dataset
    sampler = DistributedSampler(dataset, num_replicas=dist.get_world_size(), rank=rank, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=args.batch, sampler=sampler, drop_last=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)

    def batches():  # cycle through epochs; set_epoch reshuffles the shards each epoch
        for epoch in range(10**6):
            sampler.set_epoch(epoch)
            yield from loader

    first_labels, losses, step_ends = None, [], []
    for step, (images, labels) in enumerate(batches()):
        if step == args.warmup:  # clock starts after the warm-up steps, all ranks together
            dist.barrier()
            start = time.perf_counter()
        if step > args.warmup:  # loss.item() below synchronised the device: the previous step is done
            step_ends.append(time.perf_counter())
        if step == args.warmup + args.steps:
            break
        if step == args.fail_step and rank == args.fail_rank:
            fail(args.fail_mode, rank, step)
        if first_labels is None:
            first_labels = labels[:8].tolist()
        images, labels = images.to(device), labels.to(device)
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # DDP: gradients are averaged across ranks here, bucket by bucket
        optimizer.step()
        losses.append(loss.item())
    synchronize(device)
    elapsed = time.perf_counter() - start
    step_s = [b - a for a, b in zip([start] + step_ends, step_ends)]
    return {"rank": rank, "device": str(device), "threads": torch.get_num_threads(),
            "images_per_s": round(args.batch * args.steps / elapsed, 2),
            "spread": window_spread(step_s), "window_images_per_s": window_rates(step_s, args.batch),
            "parameter_hash": parameter_hash(model), "first_batch_labels": first_labels,
            "last_loss": round(losses[-1], 4)}


def fail(mode: str, rank: int, step: int) -> None:
    """The simulated fault: this rank dies (SIGKILL, a crash) or hangs (the others wait until the timeout)."""
    print(f"rank {rank}: simulated {mode} at step {step}", file=sys.stderr, flush=True)
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(10**6)  # stuck: the other ranks wait in all-reduce until --timeout


def summed_windows(per_rank: list[list[float] | None]) -> list[float] | None:
    """All ranks' images per second, window by window (the ranks step together); None if a rank has none."""
    if not per_rank or any(not w for w in per_rank) or len({len(w) for w in per_rank}) != 1:
        return None
    return [round(sum(rates), 3) for rates in zip(*per_rank)]


def summarize(args, ranks: list[dict]) -> dict:
    """Rank 0's summary of every rank's measurements: total throughput, the worst spread, identical weights."""
    return {"world_size": len(ranks), "process_group": dist.get_backend(), "model": args.model, "mode": "DDP",
            "batch_per_rank": args.batch, "steps": args.steps,
            "images_per_s": round(sum(r["images_per_s"] for r in ranks), 2),
            "spread": max((r["spread"] for r in ranks if r["spread"] is not None), default=None),
            "window_images_per_s": summed_windows([r.get("window_images_per_s") for r in ranks]),
            "parameters identical across ranks": len({r["parameter_hash"] for r in ranks}) == 1, "ranks": ranks}


def main(argv=None) -> None:
    args = parse_args(argv)
    rank, device = join(args)
    mine = train_steps(args, rank, device)
    ranks = [None] * dist.get_world_size()
    dist.all_gather_object(ranks, mine)
    if rank == 0:
        print(SUMMARY_PREFIX + json.dumps(summarize(args, ranks)), flush=True)
    dist.destroy_process_group()


@dataclass
class Launch:
    """What a torchrun launch did: exit code, rank 0's JSON summary (or None), wall time, output."""

    command: list[str]
    returncode: int | None
    wall_s: float
    output: str
    summary: dict | None
    timed_out: bool = False
    returncodes: list[int | None] = field(default_factory=list)  # one per torchrun agent

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.summary is not None

    @property
    def first_failure(self) -> tuple[int, int, str] | None:
        """torchrun's root cause: (rank that failed first, its exit code, torchrun's note), or None."""
        cause = re.search(r"Root Cause.*?rank\s*:\s*(\d+).*?exitcode\s*:\s*(-?\d+).*?traceback\s*:\s*([^\n]*)",
                          self.output, re.S)
        return (int(cause[1]), int(cause[2]), cause[3].strip()) if cause else None

    @property
    def raised(self) -> tuple[int, str] | None:
        """The last exception a rank raised: (rank, 'Type: message'), without C++ source locations, or None."""
        errors = re.findall(r"^\[rank(\d+)\]: (\w+(?:Error|Exception)\b.*)$", self.output, re.M)
        if not errors:
            return None
        rank, text = errors[-1]
        return int(rank), re.sub(r"\[[^\]]*\.(?:cc|cpp|h|hpp):\d+\]\s*", "", text).strip()

    @property
    def collective_timed_out(self) -> bool:
        """Whether a rank's collective gave up waiting for a peer (init_process_group's timeout ended the job)."""
        return bool(self.raised) and re.search(r"timed? ?out|timeout", self.raised[1], re.I) is not None

    def failure(self) -> str:
        """One line saying why the launch failed (torchrun's root cause), or '' if it succeeded."""
        if self.ok:
            return ""
        if self.timed_out:
            return f"DDP launch killed after {self.wall_s:.0f} s (timeout): a rank hung"
        cause = self.first_failure
        if cause:
            why = f"rank {cause[0]} failed first (exit code {cause[1]})"
            if cause[1] < 0:  # killed by a signal: torchrun names it
                why += ", " + re.sub(r" by PID \d+", "", cause[2])
        else:
            why = (self.output.strip().splitlines() or ["no output"])[-1][:200]
        if self.raised:
            why += f"; rank {self.raised[0]} raised {self.raised[1][:160]}"
        return f"DDP launch failed in {self.wall_s:.1f} s with exit code {self.returncode}: {why}"

    def row_fields(self) -> dict:
        """What a result row says about this launch: images/s of all ranks, world size, spread, or why it failed."""
        summary = self.summary or {}
        ranks = summary.get("ranks", [])
        how = f"{len(ranks)} process(es) x {ranks[0]['threads']} thread(s), {summary['process_group']}" if ranks else ""
        return dict(throughput=summary.get("images_per_s") if self.ok else None, world_size=len(ranks) or None,
                    spread=summary.get("spread"), reason=self.failure() or how, returncode=self.returncode,
                    round_throughputs=summary.get("window_images_per_s") if self.ok else None,
                    wall_s=round(self.wall_s, 1))


def torchrun_command(nproc: int, args: list[str] = (), rendezvous: list[str] = ("--standalone",)) -> list[str]:
    """`torchrun --standalone --nproc_per_node=N -m vitlab.workers.ddp ARGS` run with this Python.

    rendezvous replaces --standalone for several machines, e.g. ["--nnodes=2", "--rdzv-backend=c10d",
    "--rdzv-endpoint=node0:29500", "--rdzv-id=job1"].
    """
    return [sys.executable, "-m", "torch.distributed.run", *rendezvous, f"--nproc_per_node={nproc}",
            "-m", "vitlab.workers.ddp", *map(str, args)]


def free_port() -> int:
    """A TCP port on localhost that nothing listens on now (the rendezvous point of a local multi-node run)."""
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def launch(nproc: int, args: list[str] = (), threads: int | None = None, timeout: float = 180,
           nodes: int = 1) -> Launch:
    """Run torchrun with `nproc` ranks (OMP_NUM_THREADS=threads each), killing all of it after `timeout` s.

    nodes > 1 starts that many torchrun agents on this machine, each standing in for a machine with
    `nproc` ranks, meeting through a c10d rendezvous on localhost (the multi-node form of the command).
    """
    if nodes == 1:
        commands = [torchrun_command(nproc, args)]
    else:
        rendezvous = [f"--nnodes={nodes}", "--rdzv-backend=c10d", f"--rdzv-endpoint=localhost:{free_port()}",
                      "--rdzv-id=vitlab-local-nodes"]
        commands = [torchrun_command(nproc, args, rendezvous)] * nodes
    env = dict(os.environ)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    start = time.perf_counter()
    # Own process groups, so that a timeout can kill torchrun *and* its ranks, never leaving orphans.
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=env, start_new_session=True) for command in commands]
    outputs, timed_out = [], False
    for proc in procs:
        try:
            outputs.append(proc.communicate(timeout=max(1.0, timeout - (time.perf_counter() - start)))[0])
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            outputs.append(proc.communicate()[0])
            timed_out = True
    output = "\n".join(outputs)
    summaries = [line[len(SUMMARY_PREFIX):] for line in output.splitlines() if line.startswith(SUMMARY_PREFIX)]
    summary = json.loads(summaries[-1]) if summaries else None
    codes = [proc.returncode for proc in procs]
    returncode = None if timed_out else next((code for code in codes if code), 0)
    return Launch(commands[0], returncode, time.perf_counter() - start, output, summary, timed_out, codes)


if __name__ == "__main__":
    main()
