"""timed(): honest latency numbers — warm-up apart, device synchronised, median and p90."""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

import torch

from vitlab.device import synchronize
from vitlab.book.text import first_line


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
    """A Timing gathered over interleaved rounds: each round's median, and their relative spread."""

    round_medians_ms: list[float] = field(default_factory=list)

    @property
    def spread(self) -> float:
        """(max - min) / median of the per-round medians: this run's noise band for this candidate."""
        return relative_spread(self.round_medians_ms)


def relative_spread(medians: list[float]) -> float:
    """(max - min) / median of `medians` (e.g. per-round medians): 0.0 for fewer than two or a zero median."""
    if len(medians) < 2:
        return 0.0
    middle = statistics.median(medians)
    return (max(medians) - min(medians)) / middle if middle else 0.0


def interleaved(candidates: dict[str, Callable[..., Any]], *args: Any, rounds: int = 3, warmup: int = 5,
                iters: int = 20, rewarm: int = 1, passes: int = 1, device: torch.device | str = "cpu",
                first_call: bool = True, clock: Callable[[], float] = time.perf_counter,
                **kwargs: Any) -> dict[str, InterleavedTiming]:
    """Time every candidate fn(*args, **kwargs) in turn, round after round, for `rounds` rounds.

    A noisy spell on a shared machine then hits all candidates alike. Round 1 reports each first call
    apart (unless `first_call=False`: the caller made it already, e.g. to time a compile) and runs
    `warmup` untimed calls; every later turn runs `rewarm` (caches went to the others meanwhile).
    `iters` samples per candidate in all, split evenly over the rounds (at least one per round). With
    `passes` > 1 a round visits every candidate that many times, a slice of its samples each time, so
    one candidate's round median is taken over the whole round's stretch of time, not one burst of it.
    """
    if rounds < 1 or passes < 1:
        raise ValueError(f"rounds and passes must be at least 1, got {rounds} and {passes}")
    per_round = max(1, -(-iters // rounds))
    per_pass = [per_round // passes + (i < per_round % passes) for i in range(passes)]
    found: dict[str, InterleavedTiming] = {}
    for round_ in range(rounds):
        this_round: dict[str, list[float]] = {name: [] for name in candidates}
        for pass_, count in enumerate(c for c in per_pass if c):
            for name, fn in candidates.items():
                start = round_ == 0 and pass_ == 0
                t = timed(fn, *args, device=device, warmup=warmup if start else rewarm, iters=count,
                          first_call=first_call and start, clock=clock, **kwargs)
                this_round[name].extend(t.samples_ms)
                if start:
                    found[name] = InterleavedTiming([], t.first_call_s, t.warmup, t.output)
                found[name].output = t.output
        for name, samples in this_round.items():
            found[name].samples_ms.extend(samples)
            found[name].round_medians_ms.append(statistics.median(samples))
    return found


class Ceiling(NamedTuple):
    """A measured ceiling: FLOP/s (int8: OP/s) or None where it could not be measured, how, and how many
    measurements in this run it is the highest of."""

    rate: float | None
    basis: str
    count: int = 1


def gemm_ceiling(device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32, size: int = 2048,
                 warmup: int = 2, iters: int = 10) -> Ceiling:
    """The measured ceiling: FLOP/s (int8: OP/s) of a size^3 matmul on `device` in `dtype`, and its basis.

    The rate of the *fastest* of `iters` calls: a ceiling is what the device was seen to reach, and on a
    machine whose speed drifts a median can land in a slow spell that the model's timings then exceed.

    int8 uses torch._int_mm (int8 x int8 -> int32); (None, why) where this torch or device lacks it.
    """
    device = torch.device(device)
    name = str(dtype).replace("torch.", "")
    gen = torch.Generator().manual_seed(0)
    if dtype == torch.int8:
        if not hasattr(torch, "_int_mm"):
            return Ceiling(None, f"int8 GEMM: torch {torch.__version__} has no torch._int_mm")
        a, b = (torch.randint(-64, 64, (size, size), generator=gen, dtype=torch.int8).to(device) for _ in range(2))
        fn, how = torch._int_mm, "torch._int_mm, int32 accumulate"
    else:
        a, b = (torch.randn(size, size, generator=gen).to(device=device, dtype=dtype) for _ in range(2))
        fn, how = torch.matmul, "torch.matmul"
    try:
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
