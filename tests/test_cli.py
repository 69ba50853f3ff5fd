import subprocess
import sys

import pytest


def vitlab(*args):
    return subprocess.run([sys.executable, "-m", "vitlab.cli", *args], capture_output=True, text=True, timeout=300)


def test_env_names_isa_and_versions():
    import torch
    result = vitlab("env")
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"ISA {torch.backends.cpu.get_cpu_capability()}" in result.stdout
    assert "torch      " in result.stdout and "ipex       " in result.stdout


@pytest.mark.parametrize("args, message", [
    (["env", "--backend", "tpu"], "unknown backend 'tpu'"),
    (["launch"], "invalid choice: 'launch'"),
    (["env", "--colour"], "unrecognized arguments: --colour"),
    ([], "required"),
])
def test_bad_arguments_give_one_line_and_exit_2(args, message):
    result = vitlab(*args)
    assert result.returncode == 2
    lines = [l for l in result.stderr.splitlines() if l.startswith("vitlab")]
    assert len(lines) == 1 and message in lines[0]
    assert "Traceback" not in result.stderr


def test_absent_backend_gives_one_line_and_exit_2():
    from vitlab.device import available_backends
    absent = next((b for b in ("xpu", "mps", "cuda") if b not in available_backends()), None)
    if absent is None:
        pytest.skip("every backend is present")
    result = vitlab("env", "--backend", absent)
    assert result.returncode == 2 and "not available on this machine" in result.stderr


@pytest.mark.parametrize("into", ["/proc/nope", "/dev/null/sub"])
def test_run_into_a_folder_that_cannot_be_made_gives_one_line_and_exit_2(into):
    result = vitlab("run", "--backend", "cpu", "--only", "01", "--into", into)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith(f"vitlab run: cannot write into '{into}'") and "Traceback" not in result.stderr


def _rows_folder(tmp_path, rows, stack="current"):
    import json
    from vitlab.contract import layout
    path = layout.rows_file("cpu", stack, tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


ROW = {"backend": "cpu", "notebook": "01_toy", "model": "m", "batch": 1, "run_id": "r", "time": "1",
       "versions": {"torch": "2.14.1", "ipex": None}, "sweep": False}


def test_check_rows_passes_rows_that_keep_the_contract(tmp_path, capsys):
    from vitlab import cli
    folder = _rows_folder(tmp_path, [{**ROW, "variant": "eager", "baseline": True, "median_ms": 1.0},
                                     {**ROW, "variant": "ipex", "status": "skipped", "median_ms": None}])
    assert cli.main(["check-rows", "--stack", "current", str(folder)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == \
        "current stack: 2 result rows (latest runs) from 1 notebooks, torch 2.14.1"


@pytest.mark.parametrize("rows, problem", [
    ([{**ROW, "variant": "eager", "median_ms": 1.0}], "('cpu', '01_toy', 'm', 1, None, False): 0 baseline rows"),
    ([{**ROW, "variant": "eager", "baseline": True}, {**ROW, "variant": "int8", "failed": "boom", "median_ms": 1.0}],
     "01_toy: failed row 'int8' carries a timing"),
    ([{**ROW, "variant": "eager", "baseline": True, "versions": {"torch": "2.14.1", "ipex": "2.8.0"}}],
     "01_toy: row 'eager' ran with IPEX 2.8.0 on the current stack"),
])
def test_check_rows_fails_on_each_broken_rule(tmp_path, capsys, rows, problem):
    from vitlab import cli
    assert cli.main(["check-rows", "--stack", "current", str(_rows_folder(tmp_path, rows))]) == 1
    assert problem in capsys.readouterr().out.splitlines()


def test_check_rows_fails_where_there_are_no_rows(tmp_path, capsys):
    from vitlab import cli
    assert cli.main(["check-rows", str(tmp_path)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "no rows"


def _run_rows(path, compile_ms, run_id, run_to_run=None):
    """One chapter run's rows: eager and compile, 8 rounds each, timed side by side (with `run_to_run`: the
    run-to-run spread each row carries)."""
    import json
    rows = []
    for variant, ms in (("eager", 100.0), ("compile", compile_ms)):
        rounds = [ms * (1 + 0.01 * ((k * 7) % 3 - 1)) for k in range(8)]
        rows.append({"backend": "cpu", "notebook": "02_n", "model": "m", "batch": 1, "group": None, "sweep": False,
                     "variant": variant, "baseline": variant == "eager", "median_ms": ms, "throughput": 1000 / ms,
                     "round_medians_ms": rounds, "timing_session": run_id, "run_id": run_id, "time": "1",
                     "status": "ok", "device_name": "cpu", "versions": {"torch": "2.8.0"}, "preset": "quick"})
        if run_to_run is not None:
            rows[-1]["run_to_run"] = run_to_run
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_compare_runs_tallies_two_runs_and_saves_the_tally(tmp_path):
    import json
    a, b = _run_rows(tmp_path / "a.jsonl", 50.0, "a"), _run_rows(tmp_path / "b.jsonl", 51.0, "b")
    result = vitlab("compare-runs", str(a), str(b), "--save", str(tmp_path / "tally.json"))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "A: faster 2.00× | B: faster 1.96× | same" in result.stdout
    assert "1 timed comparisons in both runs: 1 same, 0 one undecided, 0 opposite" in result.stdout
    assert json.loads((tmp_path / "tally.json").read_text())["tally"] == {"same": 1}
    flipped = _run_rows(tmp_path / "c.jsonl", 200.0, "c")
    assert "| opposite" in vitlab("compare-runs", str(a), str(flipped)).stdout


def test_compare_runs_rounds_only_judges_the_rows_without_their_run_to_run_spread(tmp_path):
    import json
    # 1.20x apart, with a run-to-run spread of ±30% in each row: inconclusive; on the rounds alone (±1%): faster
    a, b = (_run_rows(tmp_path / f"{n}.jsonl", 100 / 1.2, n, run_to_run=0.3) for n in "ab")
    with_spread = vitlab("compare-runs", str(a), str(b), "--save", str(tmp_path / "with.json"))
    assert "A: inconclusive 1.20× | B: inconclusive 1.20×" in with_spread.stdout, with_spread.stderr[-2000:]
    alone = vitlab("compare-runs", "--rounds-only", str(a), str(b), "--save", str(tmp_path / "alone.json"))
    assert "A: faster 1.20× | B: faster 1.20× | same" in alone.stdout, alone.stderr[-2000:]
    saved = {name: json.loads((tmp_path / f"{name}.json").read_text()) for name in ("with", "alone")}
    assert saved["with"]["with_run_to_run"] and not saved["alone"]["with_run_to_run"]
    assert saved["alone"]["half_width_median"] < 0.05 < saved["with"]["half_width_median"]


def test_compare_runs_with_a_missing_file_says_so_in_one_line(tmp_path):
    result = vitlab("compare-runs", str(tmp_path / "nothing.jsonl"), str(tmp_path))
    assert result.returncode == 2 and "no such file or folder" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
