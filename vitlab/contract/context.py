"""The run context: everything a chapter run is told, in one record. Torch-free.

`vitlab run` makes one per run and hands it to each chapter as its single papermill parameter, `context`
(`to_dict()`: papermill parameters are JSON); the chapter's start call reads it back (`from_dict`). A chapter run
by hand passes a dict of what it sets (or None) and the rest takes the defaults: the device found, the quick preset,
a fresh run id, rows into the scratch folder.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from vitlab.contract.rows import new_run_id


@dataclass(frozen=True)
class RunContext:
    device_type: str = "auto"     # what the chapter runs on: auto | cpu | cuda | xpu | mps (ROCm GPUs are "cuda")
    backend: str | None = None    # the book's page name (cpu, cuda, rocm, xpu, mps); None: the device's own
    preset: str = "quick"
    stack: str | None = None      # reference | current; None: not a book run
    run_id: str = field(default_factory=new_run_id)
    git_sha: str | None = None    # None: the checkout's (store.git_sha)
    hub_offline: bool = False     # the runner found the model hub unreachable: the kernel runs offline
    rows: str | None = None       # where the rows go; None: the scratch folder's <backend>.jsonl
    host_rows: str | None = None  # where a GPU run's host-CPU rows go (not kept); None: the scratch folder

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> RunContext:
        """The context from its dict (`to_dict`'s, or the few keys a run by hand sets); ValueError on unknown keys."""
        unknown = set(values) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown run-context keys {sorted(unknown)}: known are "
                             f"{', '.join(f.name for f in fields(cls))}")
        return cls(**values)

    @classmethod
    def of(cls, context: RunContext | dict | None) -> RunContext:
        """A RunContext as given, from a dict, or (None) a run by hand's defaults."""
        return context if isinstance(context, RunContext) else cls.from_dict(dict(context or {}))
