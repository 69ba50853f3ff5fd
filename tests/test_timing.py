import pytest

from vitlab import timing


def test_statistics_of_known_samples():
    t = timing.Timing(samples_ms=[5.0, 1.0, 3.0, 2.0, 4.0], first_call_s=None, warmup=0)
    assert t.median_ms == 3.0
    assert t.p90_ms == pytest.approx(4.6)  # numpy's linear interpolation
    assert t.throughput(batch=8) == pytest.approx(8 * 1000 / 3.0)


def test_warmup_and_first_call_are_not_sampled():
    calls = []
    t = timing.timed(lambda: calls.append(1) or len(calls), warmup=3, iters=5)
    assert len(calls) == 1 + 3 + 5
    assert len(t.samples_ms) == 5
    assert t.first_call_s is not None and t.output == 9


def test_first_call_can_be_skipped():
    t = timing.timed(lambda: None, warmup=0, iters=2, first_call=False)
    assert t.first_call_s is None and len(t.samples_ms) == 2


def test_every_sample_is_bracketed_by_device_syncs(monkeypatch):
    events = []
    monkeypatch.setattr(timing, "synchronize", lambda device: events.append(("sync", str(device))))
    ticks = iter(range(1000))

    def clock():
        events.append(("clock",))
        return next(ticks) / 1000

    timing.timed(lambda: events.append(("call",)), device="cuda", warmup=2, iters=3, clock=clock)
    kinds = [e[0] for e in events]
    assert all(e[1] == "cuda" for e in events if e[0] == "sync")
    # first call, 2 warm-ups, then 3 samples: sync, clock, call, sync, clock
    assert kinds[:5] == ["sync", "clock", "call", "sync", "clock"]
    assert kinds[5:7] == ["call", "call"]
    assert kinds[7:] == ["sync", "clock", "call", "sync", "clock"] * 3


def test_overhead_is_far_below_one_percent_of_a_millisecond():
    # timed()'s own cost per sample (clock reads, a no-op CPU sync) must stay < 10 us = 1% of 1 ms
    t = timing.timed(lambda: None, warmup=100, iters=2000)
    assert t.median_ms < 0.010


def test_rejects_zero_iterations():
    with pytest.raises(ValueError, match="iters"):
        timing.timed(lambda: None, iters=0)
