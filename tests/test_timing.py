import pytest

from vitlab import timing
from vitlab.contract import findings


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


@pytest.mark.timing
def test_overhead_is_far_below_one_percent_of_a_millisecond():
    # timed()'s own cost per sample (clock reads, a no-op CPU sync) must stay < 10 us = 1% of 1 ms
    t = timing.timed(lambda: None, warmup=100, iters=2000)
    assert t.median_ms < 0.010


def test_rejects_zero_iterations():
    with pytest.raises(ValueError, match="iters"):
        timing.timed(lambda: None, iters=0)


def test_interleaved_times_every_candidate_once_per_round_in_turn():
    order = []
    out = timing.interleaved({"a": lambda: order.append("a"), "b": lambda: order.append("b")},
                             rounds=3, warmup=2, iters=6, rewarm=0)
    # first each candidate's first call + 2 warm-ups; then 2 samples each per round, the order rotating
    assert order == ["a"] * 3 + ["b"] * 3 + ["a", "a", "b", "b"] + ["b", "b", "a", "a"] + ["a", "a", "b", "b"]
    assert set(out) == {"a", "b"}
    assert all(len(t.samples_ms) == 6 and len(t.round_medians_ms) == 3 for t in out.values())
    assert all(t.first_call_s is not None for t in out.values())


def test_interleaved_without_first_call_makes_no_extra_call():
    order = []
    out = timing.interleaved({"a": lambda: order.append("a")}, rounds=2, warmup=1, iters=2, rewarm=0, first_call=False)
    assert order == ["a"] * 3  # one warm-up, then one sample in each of the two rounds
    assert out["a"].first_call_s is None and len(out["a"].samples_ms) == 2


def test_interleaved_spread_is_range_over_median_of_round_medians():
    # A fake clock: each call of a candidate advances time by its scripted duration (ms).
    now = [0.0]
    durations = iter([10, 10, 10,   # round 1: first call, then two samples of 10 ms (warmup=0)
                      12, 12,       # round 2: samples of 12 ms
                      8, 8])        # round 3: samples of 8 ms

    def work():
        now[0] += next(durations) / 1000

    t = timing.interleaved({"only": work}, rounds=3, warmup=0, iters=6, rewarm=0, clock=lambda: now[0])["only"]
    assert t.round_medians_ms == pytest.approx([10, 12, 8])
    assert t.spread == pytest.approx((12 - 8) / 10)
    assert t.median_ms == pytest.approx(10) and t.samples_ms == pytest.approx([10, 10, 12, 12, 8, 8])


def test_interleaved_single_round_has_zero_spread_and_rejects_zero_rounds():
    t = timing.interleaved({"x": lambda: None}, rounds=1, warmup=0, iters=3)["x"]
    assert t.spread == 0.0 and len(t.samples_ms) == 3
    with pytest.raises(ValueError, match="rounds"):
        timing.interleaved({"x": lambda: None}, rounds=0)


def test_interleaved_passes_arguments_and_keeps_last_output():
    t = timing.interleaved({"double": lambda x: 2 * x}, 21, rounds=2, warmup=0, iters=2)["double"]
    assert t.output == 42


@pytest.mark.parametrize("dtype", [timing.torch.float32, timing.torch.bfloat16])
def test_gemm_ceiling_is_positive_and_names_its_dtype(dtype):
    rate, basis, count = timing.gemm_ceiling("cpu", dtype, size=256, warmup=1, iters=2)
    assert rate > 0 and count == 1
    assert str(dtype).replace("torch.", "") in basis and "256x256x256" in basis and "measured" in basis


def test_gemm_ceiling_sizes_its_gemm_by_time(monkeypatch):
    # A kernel too slow for the budget (bf16 emulated on an AVX2-only CPU) halves the size, down to the probe's;
    # with time to spare the asked size is measured. The basis names the size measured.
    monkeypatch.setattr(timing, "_onednn_linear_rate", lambda *args: None)
    _, tight, _ = timing.gemm_ceiling("cpu", timing.torch.float32, size=1024, warmup=1, iters=2, budget_s=1e-9)
    _, ample, _ = timing.gemm_ceiling("cpu", timing.torch.float32, size=1024, warmup=1, iters=2, budget_s=1e6)
    assert "256x256x256" in tight and "1024x1024x1024" in ample


def _onednn_rate():
    return timing._onednn_linear_rate(timing.torch.randn(256, 256), timing.torch.randn(256, 256), 256, 1, 2)


def test_onednn_rate_is_measured_exactly_where_torch_has_onednn(monkeypatch):
    if timing.torch.backends.mkldnn.is_available():
        assert _onednn_rate() > 0
    monkeypatch.setattr(timing.torch.backends.mkldnn, "is_available", lambda: False)
    assert _onednn_rate() is None


def test_gemm_ceiling_takes_the_faster_of_torch_matmul_and_onednn(monkeypatch):
    monkeypatch.setattr(timing, "_onednn_linear_rate", lambda *args: 1e18)  # oneDNN faster: its rate, said so
    rate, basis, _ = timing.gemm_ceiling("cpu", timing.torch.float32, size=256, warmup=1, iters=2)
    assert rate == 1e18 and "oneDNN linear, faster here than torch.matmul's" in basis
    monkeypatch.setattr(timing, "_onednn_linear_rate", lambda *args: None)  # no oneDNN: torch.matmul's own rate
    rate, basis, _ = timing.gemm_ceiling("cpu", timing.torch.float32, size=256, warmup=1, iters=2)
    assert 0 < rate < 1e18 and "(torch.matmul)" in basis


def test_raise_ceiling_keeps_the_highest_measurement_and_counts_them(monkeypatch):
    rates = iter([100.0, 300.0, 200.0])
    monkeypatch.setattr(timing, "gemm_ceiling", lambda *args: timing.Ceiling(rate := next(rates), f"measured: {rate:.0f}"))
    ceiling = timing.gemm_ceiling("cpu")
    ceiling = timing.raise_ceiling(ceiling, "cpu")  # a faster measurement replaces the first
    assert ceiling == timing.Ceiling(300.0, "measured: 300", 2)
    ceiling = timing.raise_ceiling(ceiling, "cpu")  # a slower one is counted but does not lower it
    assert ceiling == timing.Ceiling(300.0, "measured: 300", 3)
    monkeypatch.setattr(timing, "gemm_ceiling", lambda *args: timing.Ceiling(None, "int8 GEMM: no kernel"))
    assert timing.raise_ceiling(timing.Ceiling(None, "int8 GEMM: no kernel"), "cpu") == (None, "int8 GEMM: no kernel", 2)
    # a ceiling that could not be measured gives way to one that could, and the count goes on
    monkeypatch.setattr(timing, "gemm_ceiling", lambda *args: timing.Ceiling(50.0, "measured: 50"))
    assert timing.raise_ceiling(timing.Ceiling(None, "no kernel", 2), "cpu") == (50.0, "measured: 50", 3)


def _int8_matmul_works() -> bool:
    """Whether this torch multiplies int8 matrices on the CPU (torch._int_mm), asked directly."""
    if not hasattr(timing.torch, "_int_mm"):
        return False
    a = timing.torch.ones(32, 32, dtype=timing.torch.int8)
    try:
        return bool((timing.torch._int_mm(a, a) == 32).all())
    except RuntimeError:
        return False


def test_gemm_ceiling_int8_measures_where_torch_int_mm_works():
    rate, basis, _ = timing.gemm_ceiling("cpu", timing.torch.int8, size=256, warmup=1, iters=2)
    if _int8_matmul_works():
        assert rate > 0 and "int8 GEMM 256x256x256 (torch._int_mm, int32 accumulate)" in basis and "OP/s" in basis
    else:
        assert rate is None and basis.startswith("int8 GEMM: ")


def test_gemm_ceiling_int8_says_why_it_has_no_rate(monkeypatch):
    def refuse(a, b):
        raise RuntimeError("no int8 kernel for this device\nsecond line")

    monkeypatch.setattr(timing.torch, "_int_mm", refuse, raising=False)
    assert timing.gemm_ceiling("cpu", timing.torch.int8, size=64, warmup=0, iters=1) == \
        (None, "int8 GEMM: RuntimeError: no int8 kernel for this device", 1)
    monkeypatch.delattr(timing.torch, "_int_mm")
    rate, basis, _ = timing.gemm_ceiling("cpu", timing.torch.int8, size=64)
    assert rate is None and basis == f"int8 GEMM: torch {timing.torch.__version__} has no torch._int_mm"


def test_flop_fields_put_the_achieved_rate_against_ceiling_and_peak():
    # 2 GFLOP per image, batch 4, 10 ms per call -> 800 GFLOP/s; ceiling 1000 GFLOP/s, nominal peak 2000
    fields = timing.flop_fields(2e9, 4, 10.0, timing.Ceiling(1e12, "measured: fp32 GEMM", 3), peak=2e12)
    assert fields["flops_per_s"] == 800_000_000_000
    assert abs(fields["ceiling_fraction"] - 0.8) < 1e-12 and abs(fields["peak_fraction"] - 0.4) < 1e-12
    assert fields["ceiling_basis"] == "measured: fp32 GEMM" and fields["ceiling_count"] == 3
    missing = timing.flop_fields(2e9, 4, 10.0, timing.Ceiling(None, "int8 GEMM: no torch._int_mm"))
    assert missing["ceiling_fraction"] is None and missing["peak_fraction"] is None
    assert missing["ceiling_basis"].startswith("int8 GEMM")


def test_passes_split_a_round_into_visits_and_its_median_spans_them():
    now, order = [0.0], []
    steps = {"a": iter([1, 9, 9, 1]), "b": iter([5, 5, 5, 5])}  # a: fast, then slow, slow, fast (ms)

    def call(name):
        order.append(name)
        now[0] += next(steps[name]) / 1000

    out = timing.interleaved({"a": lambda: call("a"), "b": lambda: call("b")}, rounds=1, passes=2, warmup=0,
                             iters=4, rewarm=0, first_call=False, clock=lambda: now[0])
    assert order == ["a", "a", "b", "b", "a", "a", "b", "b"]  # two visits per candidate within the one round
    assert out["a"].round_medians_ms == pytest.approx([5.0])  # the median of all four samples: 1, 9, 9, 1
    assert out["a"].samples_ms == pytest.approx([1, 9, 9, 1]) and out["b"].median_ms == pytest.approx(5)
    with pytest.raises(ValueError, match="passes"):
        timing.interleaved({"x": lambda: None}, passes=0)


def test_a_budget_in_seconds_sizes_rounds_by_the_calibrated_call_time():
    now = [0.0]
    cost = {"fast": 0.001, "slow": 0.010}  # seconds a call, on a fake clock

    def call(name):
        now[0] += cost[name]

    out = timing.interleaved({n: (lambda n=n: call(n)) for n in cost}, warmup=3, budget_s=2.0, clock=lambda: now[0])
    fast, slow = out["fast"], out["slow"]
    assert len(fast.round_medians_ms) == len(slow.round_medians_ms) == timing.MAX_ROUNDS  # the budget allows many
    timed_s = sum(fast.samples_ms + slow.samples_ms) / 1000
    assert 0.8 * 2.0 <= timed_s <= 2.0 and fast.budget_s == 2.0
    assert fast.session == slow.session != ""  # one interleaved call: its rows pair up
    tight = timing.interleaved({n: (lambda n=n: call(n)) for n in cost}, warmup=3, budget_s=0.01, clock=lambda: now[0])
    assert len(tight["slow"].round_medians_ms) == timing.MIN_ROUNDS  # never fewer rounds than a verdict needs


def test_plan_rounds_drops_the_rewarm_call_when_calls_are_slow():
    assert timing.plan_rounds({"a": 1.0, "b": 1.0}, 20.0) == (15, 665, 1)
    rounds, per_round, rewarm = timing.plan_rounds({"a": 3000.0, "b": 3000.0}, 20.0)
    assert (rounds, per_round, rewarm) == (timing.MIN_ROUNDS, 1, 0)


def _alternating(now: list, ratio: float, wobble: float):
    """Two candidates on a fake clock: `b` takes `ratio` times `a`'s 10 ms, `wobble` more or less every other round
    (a's visit starts a round for b: the order rotates, so b's call count says the round)."""
    calls = {"b": 0}

    def a():
        now[0] += 0.010

    def b():
        calls["b"] += 1
        round_ = calls["b"]
        now[0] += 0.010 * ratio * (1 + wobble * (-1) ** round_)
    return {"a": a, "b": b}


def test_an_undecided_comparison_gets_more_rounds_within_its_extension():
    now = [0.0]
    # b is 1.05x slower give or take 4% per call: its interval straddles the threshold however long it runs
    out = timing.interleaved(_alternating(now, 1.05, 0.04), warmup=2, budget_s=0.5, rewarm=0, clock=lambda: now[0])
    rounds = len(out["b"].round_medians_ms)
    planned, _, _ = timing.plan_rounds({"a": 10.0, "b": 10.5}, 0.5, rewarm=0)
    assert planned < rounds <= timing.MAX_ROUNDS_EXTENDED
    assert sum(out["a"].samples_ms + out["b"].samples_ms) / 1000 <= 2 * 0.5 + 0.05  # budget + extension (one round)
    tight = timing.interleaved(_alternating(now, 1.05, 0.04), warmup=2, budget_s=0.5, extend_s=0.0, rewarm=0,
                               clock=lambda: now[0])
    assert len(tight["b"].round_medians_ms) == planned  # no extension asked: the planned rounds only


def test_a_decided_comparison_stops_at_its_planned_rounds():
    now = [0.0]
    out = timing.interleaved(_alternating(now, 1.5, 0.01), warmup=2, budget_s=0.5, rewarm=0, clock=lambda: now[0])
    planned, _, _ = timing.plan_rounds({"a": 10.0, "b": 15.0}, 0.5, rewarm=0)
    assert len(out["a"].round_medians_ms) == planned
    assert timing.undecided(out, "a") == []
    edge = timing.interleaved(_alternating(now, 1.05, 0.04), warmup=2, budget_s=0.5, extend_s=0.0, rewarm=0,
                              clock=lambda: now[0])
    assert timing.undecided(edge, "a") == ["b"]


def test_extra_rounds_time_only_the_baseline_and_the_undecided():
    now = [0.0]
    three = _alternating(now, 1.05, 0.04)  # b: undecided however long it runs
    visits = {"c": 0}

    def c():  # 3x slower than a, steadily: decided in the planned rounds
        visits["c"] += 1
        now[0] += 0.030
    out = timing.interleaved({**three, "c": c}, warmup=2, budget_s=0.5, rewarm=0, clock=lambda: now[0])
    planned = len(out["c"].round_medians_ms)
    assert len(out["a"].round_medians_ms) == len(out["b"].round_medians_ms) > planned  # b was extended, c was not
    # c ran nothing in the extra rounds: its calls are its first call, its 1-2 warm-up calls and its timed samples
    assert visits["c"] - len(out["c"].samples_ms) in (2, 3)
    def row(name):
        return {"round_medians_ms": out[name].round_medians_ms, "timing_session": out[name].session}
    found = findings.interval(row("c"), row("a"), "latency")
    assert found.paired and found.rounds == planned  # c's rounds pair with a's first ones
    assert findings.judge(found) == "slower"


SPIN = "import time\nt = time.time()\nwhile time.time() - t < {s}: pass"


def test_host_load_counts_other_programs_cpu_but_not_our_own_processes():
    import os
    import subprocess
    import sys
    import time
    if not os.path.isdir("/proc"):
        pytest.skip("HostLoad reads /proc (Linux)")
    spinner = subprocess.Popen([sys.executable, "-c", SPIN.format(s=3)])
    try:
        time.sleep(0.3)  # the spinner is running
        ours, nobody = timing.HostLoad(), timing.HostLoad(root=-1)  # root=-1: no process is ours, the spinner included
        time.sleep(1.0)
        assert nobody.busy() > 0.5  # a busy loop: most of a core, seen as another program's
        assert ours.busy() < nobody.busy() - 0.5  # our own child: not another program
    finally:
        spinner.kill()
        spinner.wait()


def test_interleaved_records_the_host_load_on_every_candidate():
    found = timing.interleaved({"a": lambda: None, "b": lambda: None}, rounds=2, iters=4)
    loads = {t.host_busy for t in found.values()}
    assert len(loads) == 1 and (loads == {None} or next(iter(loads)) >= 0.0)


def test_no_extra_rounds_where_the_run_to_run_spread_alone_leaves_it_undecided():
    now = [0.0]
    edge = timing.interleaved(_alternating(now, 1.05, 0.04), warmup=2, budget_s=0.5, extend_s=0.0, rewarm=0,
                              clock=lambda: now[0])
    assert timing.undecided(edge, "a", run_to_run=0.0) == ["b"]  # more rounds could call it within noise
    assert timing.undecided(edge, "a", run_to_run=0.10) == []    # ±10% run to run: no number of rounds calls 1.05×
    clear = timing.interleaved(_alternating(now, 1.5, 0.04), warmup=2, budget_s=0.5, extend_s=0.0, rewarm=0,
                               clock=lambda: now[0])
    assert timing.undecided(clear, "a", run_to_run=0.10) == []   # decided already


def test_the_run_to_run_spread_comes_from_the_environment_a_chapter_s_workers_inherit(monkeypatch):
    now = [0.0]
    edge = timing.interleaved(_alternating(now, 1.05, 0.04), warmup=2, budget_s=0.5, extend_s=0.0, rewarm=0,
                              clock=lambda: now[0])
    monkeypatch.delenv(timing.RUN_TO_RUN_ENV, raising=False)
    assert timing.run_to_run_here() == 0.0 and timing.undecided(edge, "a") == ["b"]
    monkeypatch.setenv(timing.RUN_TO_RUN_ENV, "0.10")
    assert timing.undecided(edge, "a") == []
    monkeypatch.setenv(timing.RUN_TO_RUN_ENV, "not a number")
    assert timing.run_to_run_here() == 0.0
