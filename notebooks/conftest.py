"""nbval set-up: offline, results into a scratch cache of their own, stderr not compared.

Kernels started by nbval inherit this process's environment, so setting it here reaches them.
"""
import os
import tempfile
from pathlib import Path

import nbval.plugin

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
# Rows written while testing must never land in the book's results nor in the scratch rows: the kernels get a
# vitlab cache of their own (the chapters run by hand write to its results/), whose other entries (downloads,
# trained weights) link to the real cache's.
_real_cache = Path(os.environ.get("VITLAB_CACHE", Path.home() / ".cache" / "vitlab"))
_cache = Path(tempfile.mkdtemp(prefix="vitlab-nbval-cache-"))
for _entry in sorted(_real_cache.iterdir()) if _real_cache.is_dir() else []:
    if _entry.name != "results":
        (_cache / _entry.name).symlink_to(_entry)
os.environ["VITLAB_CACHE"] = str(_cache)

_compare = nbval.plugin.IPyNbCell.compare_outputs


def _without_stderr(outputs):
    return [o for o in outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]


def compare_outputs(self, test, ref, skip_compare=None):
    """Compare everything but stderr (warnings, kernel and library log lines vary by machine)."""
    return _compare(self, _without_stderr(test), _without_stderr(ref), skip_compare)


nbval.plugin.IPyNbCell.compare_outputs = compare_outputs
