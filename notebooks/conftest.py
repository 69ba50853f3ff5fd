"""nbval set-up: offline, results into a scratch folder, stderr not compared.

Kernels started by nbval inherit this process's environment, so setting it here reaches them.
"""
import os
import tempfile

import nbval.plugin

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
# Rows written while testing must never land in the book's committed results.
os.environ["VITLAB_RESULTS"] = tempfile.mkdtemp(prefix="vitlab-nbval-results-")

_compare = nbval.plugin.IPyNbCell.compare_outputs


def _without_stderr(outputs):
    return [o for o in outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]


def compare_outputs(self, test, ref, skip_compare=None):
    """Compare everything but stderr (warnings, kernel and library log lines vary by machine)."""
    return _compare(self, _without_stderr(test), _without_stderr(ref), skip_compare)


nbval.plugin.IPyNbCell.compare_outputs = compare_outputs
