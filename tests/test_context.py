"""The run context: one typed record, the chapter's one papermill parameter (JSON both ways)."""
import json
from dataclasses import fields

import pytest

from vitlab.contract.context import RunContext


def test_the_context_goes_through_json_and_back_whole():
    context = RunContext("cuda", "rocm", "gpu", "current", "run-1", "abc", True, "/tmp/rows.jsonl", "/tmp/host.jsonl")
    assert RunContext.from_dict(json.loads(json.dumps(context.to_dict()))) == context
    assert set(context.to_dict()) == {"device_type", "backend", "preset", "stack", "run_id", "git_sha", "hub_offline",
                                      "rows", "host_rows"} == {f.name for f in fields(RunContext)}


def test_a_run_by_hand_sets_two_keys_and_gets_a_fresh_run_id():
    first, second = RunContext.of({"device_type": "auto", "preset": "full"}), RunContext.of(None)
    assert (first.device_type, first.preset, first.rows, first.backend) == ("auto", "full", None, None)
    assert (second.device_type, second.preset) == ("auto", "quick")
    assert first.run_id and first.run_id != second.run_id
    assert RunContext.of(first) is first


def test_an_unknown_key_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"unknown run-context keys \['backnd'\]"):
        RunContext.from_dict({"backnd": "cpu"})
