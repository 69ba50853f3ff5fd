"""timed(): honest latency numbers — warm-up apart, device synchronised, median and p90."""
from __future__ import annotations

import os
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

import torch

from vitlab.device import synchronize
from vitlab.contract.findings import BUSY_CORES
from vitlab.contract.text import first_line


@dataclass
class Timing:
    """What timed() measured: every sample (ms), their median and p90, the first call (s)."""

    samples_ms: list[float]
    first_call_s: float | None
    warmup: int
    output: Any = field(default=None, repr=False)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def p90_ms(self) -> float:
        return percentile(self.samples_ms, 90)

    def throughput(self, batch: int) -> float:
        """Items per second at the median latency."""
        return batch * 1000.0 / self.median_ms

    def __str__(self) -> str:
        first = "" if self.first_call_s is None else f", first call {self.first_call_s:.2f} s"
        return (f"median {self.median_ms:.2f} ms, p90 {self.p90_ms:.2f} ms "
                f"over {len(self.samples_ms)} runs (+{self.warmup} warm-up{first})")


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile with linear interpolation (numpy's default)."""
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def timed(fn: Callable[..., Any], *args: Any, device: torch.device | str = "cpu",
          warmup: int = 10, iters: int = 20, first_call: bool = True,
          clock: Callable[[], float] = time.perf_counter, **kwargs: Any) -> Timing:
    """Time fn(*args, **kwargs): first call apart, `warmup` untimed calls, `iters` synchronised samples."""
    if iters < 1:
        raise ValueError(f"iters must be at least 1, got {iters}")
    first_s = None
    output = None
    if first_call:  # a torch.compile'd fn compiles here; report it, never mix it into samples
        synchronize(device)
        start = clock()
        output = fn(*args, **kwargs)
        synchronize(device)
        first_s = clock() - start
    for _ in range(warmup):
        output = fn(*args, **kwargs)
    samples = []
    for _ in range(iters):
        synchronize(device)  # queued work from before must not land in this sample
        start = clock()
        output = fn(*args, **kwargs)
        synchronize(device)
        samples.append((clock() - start) * 1000.0)
    return Timing(samples, first_s, warmup, output)


@dataclass
class InterleavedTiming(Timing):
    """A Timing gathered over interleaved rounds: each round's median, their relative spread, which interleaved
    call it came from (`session`: rows of one session pair up round by round) and the budget it was sized to."""

    round_medians_ms: list[float] = field(default_factory=list)
    session: str = ""
    budget_s: float | None = None
    host_busy: float | None = None  # cores that other processes used, on average, while it was timed

    @property
    def spread(self) -> float:
        """(max - min) / median of the per-round medians: how far this candidate moved over the run."""
        return relative_spread(self.round_medians_ms)


def relative_spread(medians: list[float]) -> float:
    """(max - min) / median of `medians` (e.g. per-round medians): 0.0 for fewer than two or a zero median."""
    if len(medians) < 2:
        return 0.0
    middle = statistics.median(medians)
    return (max(medians) - min(medians)) / middle if middle else 0.0


MIN_ROUNDS, MAX_ROUNDS = 6, 15   # a verdict needs 5 paired rounds (vitlab.contract.findings); one spare


def plan_rounds(call_ms: dict[str, float], budget_s: float, min_rounds: int = MIN_ROUNDS,
                max_rounds: int = MAX_ROUNDS, rewarm: int = 1) -> tuple[int, int, int]:
    """(rounds, timed calls per candidate per round, untimed re-warm calls per visit) that fit `budget_s` seconds,
    given each candidate's calibrated time per call: as many rounds as the budget gives (more rounds narrow a
    verdict's interval more than more calls per round do), at least `min_rounds` of one call each even when that
    overruns the budget; the re-warm call is dropped when the budget cannot pay for it (slow calls: a call of a
    second or more does not live in the caches anyway)."""
    cycle_s = sum(call_ms.values()) / 1000  # one call of every candidate
    calls = budget_s / cycle_s if cycle_s > 0 else float(max_rounds * (4 + rewarm))
    if calls < min_rounds * (2 + rewarm):  # too slow to re-warm: one call a round, as many rounds as fit
        rounds = int(min(max_rounds, max(min_rounds, calls)))
        return rounds, max(1, int(calls // rounds)), 0
    rounds = int(min(max_rounds, max(min_rounds, calls // (4 + rewarm))))
    return rounds, max(1, int(calls // rounds) - rewarm), rewarm


def _proc_stats() -> dict[int, tuple[int, int]]:
    """Every process's (parent pid, CPU ticks used: user + system) from /proc; {} where there is no /proc."""
    stats = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return stats
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()  # after "pid (comm)": state ppid ... utime stime
        except (OSError, IndexError):
            continue  # ended meanwhile
        stats[int(name)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    return stats


def _tree(stats: dict[int, tuple[int, int]], root: int) -> set[int]:
    """`root` and every process below it."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += children.get(pid, [])
    return found


class HostLoad:
    """How much CPU other processes took while something was timed: made before, busy() after, in cores.

    "Ours" is the tree below our parent process (a notebook kernel's launcher; a torchrun or serving launcher's
    instances, which run side by side on purpose), or below this process where the parent is init. A process that
    starts and ends between the two looks is missed; everything else another program ran on this machine is
    counted, and a comparison timed while it exceeded BUSY_CORES is not judged (vitlab.contract.findings)."""

    def __init__(self, root: int | None = None):
        parent = os.getppid()
        self.root = root if root is not None else parent if parent > 1 else os.getpid()
        self.ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self.began, self.before = time.monotonic(), _proc_stats()

    def busy(self) -> float | None:
        """Cores (0.0 = none, 1.0 = one whole core) that processes outside ours used since this HostLoad was made;
        None where /proc cannot tell (not Linux)."""
        after, wall = _proc_stats(), time.monotonic() - self.began
        if not after or wall <= 0:
            return None
        ours = _tree(after, self.root) | _tree(self.before, self.root)
        used = sum(ticks - self.before.get(pid, (0, 0))[1]  # a process new since then: all its ticks
                   for pid, (_, ticks) in after.items() if pid not in ours)
        return max(0.0, used / self.ticks / wall)


def calibrate(candidates: dict[str, Callable[..., Any]], *args: Any, warmup: int, warmup_s: float = float("inf"),
              device: torch.device | str = "cpu", first_call: bool = True,
              clock: Callable[[], float] = time.perf_counter, **kwargs: Any) -> tuple[dict, dict, dict]:
    """Each candidate's first call (timed, unless `first_call=False`), then up to `warmup` timed warm-up calls, but
    no more than `warmup_s` seconds of them (at least one): returns (first call s, time per call ms or None, last
    output) per candidate. The time per call is the median of the warm-up calls after the first."""
    first, per_call, outputs = {}, {}, {}
    for name, fn in candidates.items():
        first[name], per_call[name] = None, None
        if first_call:  # a torch.compile'd fn compiles here: reported apart, never a sample
            synchronize(device)
            start = clock()
            outputs[name] = fn(*args, **kwargs)
            synchronize(device)
            first[name] = clock() - start
        samples: list[float] = []
        while len(samples) < warmup and (sum(samples) / 1000 < warmup_s or not samples):
            t = timed(fn, *args, device=device, warmup=0, iters=1, first_call=False, clock=clock, **kwargs)
            samples.append(t.samples_ms[0])
            outputs[name] = t.output
        if samples:
            per_call[name] = statistics.median(samples[1:] or samples)
    return first, per_call, outputs


def interleaved(candidates: dict[str, Callable[..., Any]], *args: Any, rounds: int = 3, warmup: int = 5,
                iters: int = 20, rewarm: int = 1, passes: int = 1, device: torch.device | str = "cpu",
                first_call: bool = True, clock: Callable[[], float] = time.perf_counter,
                budget_s: float | None = None, extend_s: float | None = None, baseline: str | None = None,
                **kwargs: Any) -> dict[str, InterleavedTiming]:
    """Time every candidate fn(*args, **kwargs) in turn, round after round.

    A noisy spell on a shared machine then hits all candidates alike, and round k of one candidate pairs with
    round k of another (vitlab.contract.findings judges the paired ratios). Each candidate's first call is reported
    apart (unless `first_call=False`: the caller made it already, e.g. to time a compile), then up to `warmup`
    untimed calls; every later turn runs `rewarm` (caches went to the others meanwhile). The order of the
    candidates rotates from round to round, so no candidate always follows the same neighbour.

    With `budget_s` the measurement is sized by time, not by count (as torch.utils.benchmark's adaptive_autorange
    does): the warm-up calls (at most a tenth of the budget) calibrate each candidate's time per call, and
    plan_rounds picks the rounds and calls per round that fit `budget_s` seconds of timed calls; `rounds` and
    `iters` are then ignored. Without it: `iters` samples per candidate in all, split evenly over `rounds`.
    With `passes` > 1 a round visits every candidate that many times, a slice of its samples each time.

    Undecided comparisons get more rounds: with a budget, while some candidate's paired interval against
    `baseline` (default: the first candidate) straddles the verdict threshold (vitlab.contract.findings.judge says
    "inconclusive"), another round runs, for at most `extend_s` more seconds (default: the budget again) and
    MAX_ROUNDS_EXTENDED rounds in all. An extra round times only the baseline and the candidates still undecided:
    a decided candidate keeps its rounds (they pair with the baseline's first ones, which ran beside them), and
    the seconds go where they narrow a verdict, not to re-timing a slow variant already decided. A real
    difference near the threshold is then decided instead of left to the luck of one run; a true tie at the
    threshold still ends inconclusive.
    """
    if rounds < 1 or passes < 1:
        raise ValueError(f"rounds and passes must be at least 1, got {rounds} and {passes}")
    if budget_s is not None and budget_s <= 0:
        raise ValueError(f"budget_s must be positive, got {budget_s}")
    warmup_s = budget_s / 10 / max(1, len(candidates)) if budget_s else float("inf")
    first, per_call, outputs = calibrate(candidates, *args, warmup=max(warmup, 2) if budget_s else warmup,
                                         warmup_s=warmup_s, device=device, first_call=first_call, clock=clock,
                                         **kwargs)
    if budget_s:
        rounds, per_round, rewarm = plan_rounds(per_call, budget_s, rewarm=rewarm)
    else:
        per_round = max(1, -(-iters // rounds))
    per_pass = [c for c in (per_round // passes + (i < per_round % passes) for i in range(passes)) if c]
    session = uuid.uuid4().hex[:12]
    found = {name: InterleavedTiming([], first[name], warmup, outputs.get(name), session=session, budget_s=budget_s)
             for name in candidates}
    names = list(candidates)

    visit_s = dict.fromkeys(names, 0.0)  # each candidate's seconds in the last round it ran (re-warm included)
    load = HostLoad()

    def one_round(round_: int, live: list[str]) -> None:
        order = live[round_ % len(live):] + live[: round_ % len(live)]
        this_round: dict[str, list[float]] = {name: [] for name in live}
        visit_s.update(dict.fromkeys(live, 0.0))
        for count in per_pass:
            for name in order:
                begun = clock()
                t = timed(candidates[name], *args, device=device, warmup=rewarm, iters=count, first_call=False,
                          clock=clock, **kwargs)
                visit_s[name] += clock() - begun
                this_round[name].extend(t.samples_ms)
                found[name].output = t.output
        for name, samples in this_round.items():
            found[name].samples_ms.extend(samples)
            found[name].round_medians_ms.append(statistics.median(samples))

    for round_ in range(rounds):
        one_round(round_, names)
    if budget_s and len(names) > 1:  # undecided comparisons: more rounds, while the extension's seconds last
        extend_s, start = budget_s if extend_s is None else extend_s, clock()
        reference = baseline if baseline in found else names[0]
        while round_ + 1 < MAX_ROUNDS_EXTENDED:
            live = [reference] + [name for name in names if name in undecided(found, reference)]
            if len(live) < 2 or clock() - start + sum(visit_s[name] for name in live) > extend_s:
                break
            round_ += 1
            one_round(round_, live)
    busy = load.busy()
    for timing in found.values():
        timing.host_busy = None if busy is None else round(busy, 3)
    if busy is not None and busy > BUSY_CORES:
        print(f"note: other programs used {busy:.2f} cores of this machine while {', '.join(names)} were timed; "
              "these comparisons are left undecided: close them and run it again", file=sys.stderr)
        # stderr: a diagnostic, kept out of stdout, which a serving worker's --json gives to its JSON lines only
    return found


MAX_ROUNDS_EXTENDED = 30  # an undecided comparison's rounds, extension included


RUN_TO_RUN_ENV = "VITLAB_RUN_TO_RUN"  # the running chapter's run-to-run spread on its device (vitlab.chapter.start
# sets it, in the environment, so that the worker processes a chapter starts read the same value)


def run_to_run_here() -> float:
    """The running chapter's run-to-run spread (a 95% half-width) from RUN_TO_RUN_ENV; 0.0 outside a chapter."""
    try:
        return max(0.0, float(os.environ.get(RUN_TO_RUN_ENV) or 0.0))
    except ValueError:
        return 0.0


def undecided(found: dict[str, InterleavedTiming], baseline: str, run_to_run: float | None = None) -> list[str]:
    """The candidates whose paired interval against `baseline` is still "inconclusive" under the book's verdict
    rule (vitlab.contract.findings), judged on latency (the same ratio as throughput: every candidate has the batch),
    and that more rounds could still decide: where the run-to-run spread (default: run_to_run_here()) alone leaves
    the ratio inconclusive, more rounds narrow nothing that matters, and the seconds are saved."""
    from vitlab.contract.findings import decidable, interval, judge
    level = run_to_run_here() if run_to_run is None else run_to_run
    def row(t: InterleavedTiming) -> dict:  # what findings reads of a row: its rounds, their session, the spread
        return {"round_medians_ms": t.round_medians_ms, "timing_session": t.session, "run_to_run": level}
    judged = {name: interval(row(t), row(found[baseline]), "latency") for name, t in found.items() if name != baseline}
    # fewer than 2 rounds (no interval yet): undecided, and more rounds are what decides it
    return [name for name, i in judged.items() if i is None or (judge(i) == "inconclusive" and decidable(i))]


class Ceiling(NamedTuple):
    """A measured ceiling: FLOP/s (int8: OP/s) or None where it could not be measured, how, and how many
    measurements in this run it is the highest of."""

    rate: float | None
    basis: str
    count: int = 1


GEMM_BUDGET_S = 5.0  # seconds one gemm_ceiling measurement may take (warm-up and timed calls of one kernel)
_PROBE = 256  # the size whose one call estimates a larger GEMM's time


def gemm_ceiling(device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32, size: int = 2048,
                 warmup: int = 2, iters: int = 10, budget_s: float = GEMM_BUDGET_S) -> Ceiling:
    """The measured ceiling: FLOP/s (int8: OP/s) of a size^3 matmul on `device` in `dtype`, and its basis.

    The rate of the *fastest* of `iters` calls: a ceiling is what the device was seen to reach, and on a
    machine whose speed drifts a median can land in a slow spell that the model's timings then exceed.
    Sized in seconds: where one call of a 256^3 GEMM says that the warmup + iters calls at `size` would take
    longer than `budget_s` (bf16 emulated on an AVX2-only CPU: about 1 GFLOP/s, over 10 s a call at 2048), the
    size halves until they fit; the basis names the size measured.

    int8 uses torch._int_mm (int8 x int8 -> int32); (None, why) where this torch or device lacks it.
    """
    device = torch.device(device)
    name = str(dtype).replace("torch.", "")
    gen = torch.Generator().manual_seed(0)
    if dtype == torch.int8:
        if not hasattr(torch, "_int_mm"):
            return Ceiling(None, f"int8 GEMM: torch {torch.__version__} has no torch._int_mm")
        make = lambda n: torch.randint(-64, 64, (n, n), generator=gen, dtype=torch.int8).to(device)
        fn, how = torch._int_mm, "torch._int_mm, int32 accumulate"
    else:
        make = lambda n: torch.randn(n, n, generator=gen).to(device=device, dtype=dtype)
        fn, how = torch.matmul, "torch.matmul"
    try:
        size = _gemm_size(fn, make, size, warmup + iters, budget_s, device)
        a, b = make(size), make(size)
        t = timed(fn, a, b, device=device, warmup=warmup, iters=iters, first_call=False)
    except RuntimeError as error:  # e.g. an int8 kernel missing on this device
        return Ceiling(None, f"{name} GEMM: {first_line(error, 120)}")
    rate = 2 * size**3 / (min(t.samples_ms) / 1000)
    unit = "OP/s" if dtype == torch.int8 else "FLOP/s"
    onednn = _onednn_linear_rate(a, b, size, warmup, iters) if device.type == "cpu" and dtype != torch.int8 else None
    if onednn and onednn > rate:  # e.g. an AMD CPU, where MKL's GEMM behind torch.matmul runs its AVX2 kernels
        rate, how = onednn, f"oneDNN linear, faster here than torch.matmul's {rate / 1e9:.1f} G{unit}"
    return Ceiling(rate, f"measured: {name} GEMM {size}x{size}x{size} ({how}) on {device.type}, "
                         f"{torch.get_num_threads()} threads, fastest of {iters}: {rate / 1e9:.1f} G{unit}")


def _gemm_size(fn, make, size: int, calls: int, budget_s: float, device: torch.device) -> int:
    """The largest of size, size/2, ... (not below _PROBE) whose `calls` GEMM calls fit `budget_s`, estimated from
    one timed call at _PROBE (after one untimed) and the cube of the size ratio."""
    if size <= _PROBE:
        return size
    probe = timed(fn, make(_PROBE), make(_PROBE), device=device, warmup=1, iters=1, first_call=False)
    probe_s = probe.samples_ms[0] / 1000
    while size > _PROBE and calls * probe_s * (size / _PROBE) ** 3 > budget_s:
        size //= 2
    return size


def raise_ceiling(ceiling: Ceiling, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32,
                  size: int = 2048) -> Ceiling:
    """Measure gemm_ceiling again and keep the higher of it and `ceiling` (what an earlier call returned).

    A chapter calls it between its timed groups, so the ceiling is the fastest GEMM the device was seen to run at
    any point of the run: a machine whose speed drifts can put one measurement in a slow spell that the model's
    later timings then exceed. `count` says how many measurements the kept one is the highest of.
    """
    again = gemm_ceiling(device, dtype, size)
    kept = ceiling if ceiling.rate and (not again.rate or ceiling.rate >= again.rate) else again
    return Ceiling(kept.rate, kept.basis, ceiling.count + 1)


def _onednn_linear_rate(a: torch.Tensor, b: torch.Tensor, size: int, warmup: int, iters: int) -> float | None:
    """FLOP/s of the same GEMM through oneDNN (an MKL-DNN Linear, as Inductor's freezing and OpenVINO use it) on
    the CPU; None where this torch has no oneDNN or no oneDNN kernel for the dtype."""
    if not torch.backends.mkldnn.is_available():
        return None
    import warnings
    with warnings.catch_warnings():  # torch.utils.mkldnn is built on TorchScript, which torch >= 2.9 marks deprecated
        warnings.simplefilter("ignore", FutureWarning)
        from torch.utils import mkldnn as mkldnn_utils
    try:
        linear = torch.nn.Linear(size, size, bias=False).eval()
        with torch.no_grad():
            linear.weight.copy_(b.t().float())
            fast = mkldnn_utils.to_mkldnn(linear, a.dtype)
            x = a.to_mkldnn()
            t = timed(fast, x, warmup=warmup, iters=iters, first_call=False)
    except (RuntimeError, TypeError):
        return None
    return 2 * size**3 / (min(t.samples_ms) / 1000)


def flop_fields(flops_per_item: float, batch: int, median_ms: float, ceiling: Ceiling,
                peak: float | None = None) -> dict:
    """A row's achieved FLOP/s (flops_per_item x batch per median call) against a measured ceiling and a nominal peak.

    `ceiling` is what gemm_ceiling / raise_ceiling return; the fractions are None without a figure.
    """
    achieved = flops_per_item * batch / (median_ms / 1000)
    rate, basis, count = ceiling
    return dict(flops_per_s=round(achieved), ceiling_flops_per_s=round(rate) if rate else None, ceiling_basis=basis,
                ceiling_count=count,
                ceiling_fraction=achieved / rate if rate else None,
                peak_flops=peak, peak_fraction=achieved / peak if peak else None)
