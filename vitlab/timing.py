"""timed(): honest latency numbers — warm-up apart, device synchronised, median and p90."""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from vitlab.device import synchronize


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
