"""The GPU lane's program work (vitlab.book.lane): the budget per chapter, the cap that ends a chapter and what it
left running, and the import of what came back."""
import dataclasses
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vitlab.book import lane, runner
from vitlab.contract import chapters, layout


def test_chapter_cap_keeps_time_for_the_chapters_after_it():
    assert lane.chapter_cap(540, 0, after=2, reserve=40) == 540 - lane.FINISH_S - 80
    assert lane.chapter_cap(540, 450, after=2, reserve=40) == lane.MIN_RUN_S  # never below the floor
    assert lane.chapter_cap(540, 540 - lane.FINISH_S - lane.MIN_RUN_S + 1, after=0) is None  # too little left


def test_run_one_stops_a_chapter_at_its_cap_and_ends_what_it_left(tmp_path):
    marker = tmp_path / "grandchild.pid"
    # The "chapter" starts a process in a session of its own (as papermill's kernel is) and then hangs.
    script = (f"import subprocess, sys, time\n"
              f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)\n"
              f"open({str(marker)!r}, 'w').write(str(p.pid))\n"
              f"time.sleep(60)\n")
    code, seconds = lane.run_one([sys.executable, "-c", script], cap=2, tag="test-lane-cap", log=tmp_path / "log")
    assert code is None and seconds < 2 + lane.KILL_GRACE_S
    pid = int(marker.read_text())
    time.sleep(0.2)
    state = Path(f"/proc/{pid}/stat")
    assert not state.exists() or state.read_text().split()[2] == "Z", "the tagged grandchild is still running"


def test_run_one_stops_a_chapter_at_its_cap_even_where_sigint_is_ignored(tmp_path):
    # As under `bash script &` or nohup: SIGINT ignored here is inherited by the chapter unless the lane restores it.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code, seconds = lane.run_one([sys.executable, "-c", "import time; time.sleep(60)"], cap=1, tag="test-lane-ign",
                                     log=tmp_path / "log")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert code is None and seconds < 1 + lane.KILL_GRACE_S / 2, f"ended after {seconds:.1f} s: SIGINT did not reach it"
    assert "KeyboardInterrupt" in (tmp_path / "log").read_text()


def test_run_one_returns_the_exit_code_of_a_chapter_that_ends(tmp_path):
    code, _ = lane.run_one([sys.executable, "-c", "raise SystemExit(3)"], cap=30, tag="test-lane-exit",
                           log=tmp_path / "log")
    assert code == 3


def _root(tmp_path):
    tmp_path.mkdir(parents=True)
    return tmp_path


def _lane_json(source, **states):
    runs = [lane.ChapterRun(name, state, 1.0) for name, state in states.items()]
    (source / "lane.json").write_text(json.dumps([dataclasses.asdict(r) for r in runs]))


def _row(run_id, torch_version, backend="cuda"):
    return {"backend": backend, "notebook": "02_torch_compile", "run_id": run_id, "versions": {"torch": torch_version}}


def test_import_puts_rows_and_pages_on_the_stack_of_their_torch_once(tmp_path):
    root, source = _root(tmp_path / "repo"), tmp_path / "out"
    source.mkdir()
    (source / "cuda.jsonl").write_text("\n".join(json.dumps(_row("r1", v)) for v in ("2.11.0+cu130",) * 3) + "\n")
    (source / "02_torch_compile.ipynb").write_text("{}")
    (source / lane.failed_copy("04_hardware_integration")).write_text("{}")
    _lane_json(source, **{"02_torch_compile": "ok", "04_hardware_integration": "FAILED"})
    said = lane.import_run(source, root)
    target = layout.rows_file("cuda", "current", root / "book")
    assert len(target.read_text().splitlines()) == 3
    assert (layout.pages_dir("cuda", "current", root / "book") / "02_torch_compile.ipynb").exists()
    assert not (layout.pages_dir("cuda", "current", root / "book") / "04_hardware_integration.FAILED.ipynb").exists()
    assert any("failed there" in line for line in said)
    lane.import_run(source, root)  # the same run again: nothing appended twice
    assert len(target.read_text().splitlines()) == 3


def test_import_reads_a_local_torch_tag_as_its_release(tmp_path):
    root, source = _root(tmp_path / "repo"), tmp_path / "out"
    source.mkdir()
    (source / "cpu.jsonl").write_text(json.dumps(_row("r2", "2.8.0+cpu", "cpu")) + "\n")
    _lane_json(source)
    lane.import_run(source, root)
    assert layout.rows_file("cpu", "reference", root / "book").exists()


@pytest.mark.parametrize("name, rows, message", [
    ("tpu.jsonl", [_row("r", "2.11.0", "tpu")], "is not a backend"),
    ("cuda.jsonl", [_row("r", "2.11.0", "cpu")], "holds rows of"),
    ("cuda.jsonl", [_row("a", "2.11.0"), _row("b", "2.8.0")], "mixes stacks"),
    ("cuda.jsonl", [_row("r", "2.11.0")], "no lane.json"),
])
def test_import_refuses_bad_input_with_one_line_and_writes_nothing(tmp_path, name, rows, message):
    root, source = _root(tmp_path / "repo"), tmp_path / "out"
    source.mkdir()
    (source / name).write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(ValueError, match=message):
        lane.import_run(source, root)
    assert not (root / "book").exists()
    result = subprocess.run([sys.executable, "-m", "vitlab.book.lane", "import", str(source)], capture_output=True,
                            text=True, cwd=root)
    assert result.returncode == 2 and result.stderr.count("\n") == 1


def test_chapter_stems_match_the_names_vitlab_run_takes():
    names = ["02", "torch_compile", "05_deploy_after_ipex", "notebooks/01_port_to_xpu.ipynb"]
    stems = lane.chapter_stems(names + ["99"])
    assert stems[:3] == ["02_torch_compile", "02_torch_compile", "05_deploy_after_ipex"] and stems[4] == "99"
    for name, stem in zip(names, stems):
        assert [p.stem for p in runner.select([name])] == [stem]  # `vitlab run --only NAME` picks the same chapter
    with pytest.raises(KeyError, match="unknown notebook '99'"):
        runner.select(["99"])


def test_a_gpu_lane_runs_the_gpu_chapters_and_a_cpu_lane_every_chapter():
    assert [s[:2] for s in lane.chapters_for("cuda")] == list(chapters.GPU_CHAPTERS)
    assert lane.chapters_for("cpu") == [p.stem for p in runner.chapters()]
    assert lane.chapters_for("cuda", ["03"]) == ["03_ipex_bf16_int8"]


def test_check_returned_finds_what_a_run_left_out(tmp_path):
    (tmp_path / "cuda.jsonl").write_text(json.dumps(_row("r", "2.11.0")) + "\n")  # rows of 02 only
    (tmp_path / "02_torch_compile.ipynb").write_text("{}")
    lines, problems = lane.check_returned(tmp_path, "cuda", ["02"])
    assert problems == [] and lines[-1] == "rows: 1, torch 2.11.0"
    lines, problems = lane.check_returned(tmp_path, "cuda", ["02", "04"])
    assert problems == ["04_hardware_integration: no rows in cuda.jsonl",
                        "04_hardware_integration: no executed notebook came back"]
    assert lane.check_returned(tmp_path, "cuda", ["99"])[1] == ["no chapter matches CHAPTERS='99'"]
