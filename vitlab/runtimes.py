"""Deployment runtimes beside PyTorch (OpenVINO, NNCF, ONNX Runtime, optimum-intel): optional imports, quiet
converters, and the checks chapter 05 runs on what each runtime built (which kernels ran, in which precision).

    ov, why = runtimes.load_runtime("openvino")   # (module, None), or (None, "openvino unavailable: ...")
    with runtimes.converter_quiet():
        ov_model = ov.convert_model(model, example_input=x)

The recipes themselves (convert, compile, quantize, export) are the chapter's lesson and stay on its page.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import logging
import warnings
from pathlib import Path

from vitlab.contract.text import first_line

DISTRIBUTIONS = ("openvino", "nncf", "onnxruntime", "onnx", "onnxscript", "optimum-intel")
# ONNX Runtime's integer kernels: a QDQ model whose optimised graph holds none of them ran its matmuls in float
INTEGER_KERNELS = ("QLinearMatMul", "MatMulInteger", "MatMulIntegerToFloat", "QGemm", "QLinearConv", "ConvInteger")
FLOAT_MATMULS = ("MatMul", "Gemm", "FusedMatMul")


@contextlib.contextmanager
def converter_quiet():
    """Around a converter or quantizer call: Python warnings and log records below ERROR off.

    What it mutes is harmless here: TorchScript's deprecation and tracer notes (OpenVINO's convert_model traces with
    torch.jit), transformers' notes while tracing, torch.onnx's "Missing annotation" lines, ONNX Runtime's advice to
    pre-process before quantizing, NNCF's progress and batch-size notes, and optimum's export notes. In a notebook,
    display output (NNCF's rich progress bars, which leave empty boxes on a page) is captured and dropped too."""
    try:
        from IPython.utils.capture import capture_output
        displays = capture_output(stdout=False, stderr=False, display=True)
    except ImportError:  # outside IPython: nothing to capture
        displays = contextlib.nullcontext()
    with warnings.catch_warnings(), displays:
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)  # every logger, including those a library configures on first use
        try:
            yield
        finally:
            logging.disable(logging.NOTSET)


def load_runtime(module: str):
    """(module, None) when it imports, else (None, one line saying why)."""
    try:
        return importlib.import_module(module), None
    except ModuleNotFoundError as error:  # absent from this environment
        return None, f"{module} is not installed here ({first_line(error)})"
    except Exception as error:  # installed, but built for another torch/numpy
        return None, f"{module} unavailable: {first_line(error)}"


def versions(distributions=DISTRIBUTIONS) -> str:
    """One line: each runtime distribution's installed version, or 'not installed'."""
    found = []
    for dist in distributions:
        try:
            found.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{dist} not installed")
    return " · ".join(found)


def disk_mb(*paths) -> float:
    """Size on disk of files or folders, in MB."""
    files = [f for p in map(Path, paths) for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file()]
    return round(sum(f.stat().st_size for f in files) / 1e6, 3)


def openvino_executed(compiled) -> dict[str, int]:
    """Matrix-multiply layers of an OpenVINO compiled model's runtime graph (`get_runtime_model()`: what the CPU
    plugin executes), counted by the precision each ran in (its rt_info's `runtimePrecision`). `Subgraph` nodes are
    what the plugin fuses attention into."""
    counts: dict[str, int] = {}
    for op in compiled.get_runtime_model().get_ops():
        rt = op.get_rt_info()
        kind = rt["layerType"].astype(str)
        if kind in ("FullyConnected", "MatMul", "Convolution", "Subgraph"):
            key = f"{kind} {rt['runtimePrecision'].astype(str)}"
            counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def left_in_float(executed: dict[str, int]) -> dict[str, int]:
    """The entries of `openvino_executed` that did not run in an integer precision."""
    return {k: v for k, v in executed.items() if not k.lower().endswith(("i8", "u8"))}


def counts_text(counts: dict[str, int]) -> str:
    """Counts said as text, not as a dict's repr: 'Convolution u8: 1, FullyConnected i8: 6' ('none' if empty)."""
    return ", ".join(f"{kind}: {n}" for kind, n in counts.items()) or "none"


def onnx_op_counts(path, kinds) -> dict[str, int]:
    """How many nodes of each op type in `kinds` an ONNX file holds (kinds with none left out)."""
    import onnx
    graph = onnx.load(str(path)).graph
    counts = {kind: sum(node.op_type == kind for node in graph.node) for kind in kinds}
    return {k: v for k, v in counts.items() if v}


def onnx_integer_kernels(optimized_path) -> tuple[int, dict[str, int]]:
    """(integer kernels, op counts) of the graph an ONNX Runtime session wrote to `optimized_model_filepath`."""
    ran = onnx_op_counts(optimized_path, INTEGER_KERNELS + FLOAT_MATMULS)
    return sum(ran.get(kind, 0) for kind in INTEGER_KERNELS), ran


def images_changed(score: dict, reference: dict, n: int) -> dict:
    """A variant's held-out result against eager fp32's, in images (not percent): how many top-1 answers differ
    from fp32's, and the net change in correct answers; |net| <= 1 image is a tie (one image is noise)."""
    if score is reference:
        return {"changed": 0, "net": 0, "verdict": "the reference"}
    changed = round((1 - score["top1_agreement"]) * n)
    net = None if score.get("accuracy") is None else round((score["accuracy"] - reference["accuracy"]) * n)
    word = None if net is None else "tie" if abs(net) <= 1 else "gained" if net > 0 else "lost"
    return {"changed": changed, "net": net, "verdict": word}


def images_said(change: dict, against: str = "eager fp32") -> str:
    """images_changed's result as the end of a sentence whose subject is the variant: 'got as many right as eager
    fp32 (3 answers changed)', 'got 1 more right than eager fp32: a tie, one image is noise (1 answer changed)',
    'lost 3 correct answers against eager fp32 (5 answers changed)': the net change in correct answers, then how
    many of its answers differ from the reference's."""
    net, changed = change["net"], f"{change['changed']} answer{'s' * (change['changed'] != 1)} changed"
    if net is None:
        return "was not scored"
    if net == 0:
        return f"got as many right as {against} ({changed})"
    if change["verdict"] == "tie":
        more = "more" if net > 0 else "fewer"
        return f"got {abs(net)} {more} right than {against}: a tie, one image is noise ({changed})"
    return f"{change['verdict']} {abs(net)} correct answers against {against} ({changed})"


def calibration_reader(batches, input_name: str):
    """ONNX Runtime's CalibrationDataReader over `batches` (torch tensors), fed to its calibrator one at a time."""
    from onnxruntime.quantization import CalibrationDataReader

    class Batches(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([{input_name: batch.numpy()} for batch in batches])

        def get_next(self):
            return next(self.feeds, None)

    return Batches()


def missing(why: str, precisions: dict[str, str], **fields) -> list:
    """Skipped variants (name -> precision) for a runtime that did not import: rows that say why."""
    from vitlab.bench import Variant
    return [Variant.skip(name, why, precision=precision, **fields) for name, precision in precisions.items()]


def failed(why: str, precisions: dict[str, str], **fields) -> list:
    """Failed variants (name -> precision) for a runtime whose converter failed here: rows that say why."""
    from vitlab.bench import Variant
    return [Variant.fail(name, why, precision=precision, **fields) for name, precision in precisions.items()]


def named(variants: list, name: str):
    """The variant called `name` (None when the list has none)."""
    return next((v for v in variants if v.name == name), None)


def time_groups(rec, groups: list[dict], ceilings: dict, dtypes: dict, gemm_size: int, *, baseline: str,
                device="cpu") -> tuple[list[dict], dict]:
    """Time every group first (a group: model, variants, x, warmup, budget_s, flops_per_item, scores), measuring the
    GEMM ceilings again after each one (the ceiling is the fastest seen in the run), then record every group's rows
    against the final ceilings. Returns (rows, ceilings)."""
    from vitlab.bench import record, time_variants
    from vitlab.timing import raise_ceiling
    timings = []
    for g in groups:
        timings.append(time_variants(g["variants"], g["x"], budget_s=g["budget_s"], warmup=g["warmup"],
                                     device=device, baseline=baseline))
        ceilings = {p: raise_ceiling(c, device, dtypes[p], gemm_size) for p, c in ceilings.items()}
    rows = []
    for g, found in zip(groups, timings):
        rows += record(rec, g["model"], g["variants"], found, len(g["x"]), baseline=baseline, scores=g["scores"],
                       flops_per_item=g["flops_per_item"], ceilings=ceilings)
    return rows, ceilings


def row_of(rows: list[dict], model: str, variant: str, batch: int) -> dict | None:
    """The row of `variant` on `model` at `batch` (None when there is none)."""
    return next((r for r in rows if (r["model"], r["variant"], r["batch"]) == (model, variant, batch)), None)


def fastest(rows: list[dict]) -> dict | None:
    """The fastest timed row by its own speed (`findings.speed`: per call or per item, as its `judged_by` says);
    the first row when none was timed. A pick, not a verdict: `findings.leader` says whether it beat the next."""
    from vitlab.contract.findings import speed
    timed = [r for r in rows if r and r.get("median_ms")]
    if not timed:
        return next((r for r in rows if r), None)
    return max(timed, key=speed)


def counterpart_said(lead) -> str:
    """The PyTorch row another runtime is compared with, when it is the leader of several PyTorch rows
    (`findings.Leader`), said as the end of '... compared with <said>' ('them': those rows): named the fastest
    only when the rule tells it apart from the runner-up; otherwise the best-placed of a tie, with the tie's
    evidence."""
    if lead.row is None:
        return "no PyTorch row: none was timed"
    name = lead.row.get("variant")
    if lead.runner_up is None:
        return f"{name}, the only one of them timed"
    second, evidence = lead.runner_up.baseline.get("variant"), lead.runner_up.evidence()
    if lead.decided:
        return f"{name}, the fastest of them (faster than the runner-up {second}: {evidence})"
    return (f"{name}, the best-placed of a tie rather than the fastest: it and {second} were not told apart "
            f"({lead.runner_up.verdict}: {evidence}); the comparison is with {name} because it measured ahead, "
            f"and says nothing of {second}")


def summary_rows(rows: list[dict], model: str, big_batch: int, labelled: bool) -> list[dict]:
    """One line per variant of `model`: load, size, accuracy (or agreement), batch-1 latency, large-batch
    throughput and speedup, % of the measured ceiling, status."""
    from vitlab.results import status_of, with_speedups
    by = {(r["variant"], r["batch"]): r for r in with_speedups(rows) if r["model"] == model}
    out = []
    for (variant, batch), r in by.items():
        if batch != 1:
            continue
        big = by.get((variant, big_batch), {})
        out.append({"variant": variant, "precision": r.get("precision"), "load s": r.get("compile_s"),
                    "MB": r.get("size_mb"), "top-1" if labelled else "agreement":
                    r.get("accuracy" if labelled else "top1_agreement"),
                    "b1 ms": r.get("median_ms"), "b1 p90 ms": r.get("p90_ms"), "spread": r.get("spread"),
                    f"b{big_batch} img/s": big.get("throughput"), f"b{big_batch} × fp32 (medians)": big.get("speedup"),
                    "% ceiling": None if not big.get("ceiling_fraction") else 100 * big["ceiling_fraction"],
                    "status": status_of(r)})
    return out


def failed_to(step, quiet: bool = True) -> str | None:
    """Run `step()` (a conversion or export; under converter_quiet when `quiet`): None when it worked, else the
    error's first line, for rows that say why."""
    try:
        with converter_quiet() if quiet else contextlib.nullcontext():
            step()
    except Exception as error:  # a converter this stack cannot run: rows that say why, not a traceback
        return first_line(error)
    return None


def hf_logits(model):
    """An optimum / transformers model as an inference function: pixel_values in, fp32 torch logits out
    (the model stays reachable as `.model`)."""
    import torch

    def infer(x):
        return torch.as_tensor(model(pixel_values=x).logits).float()
    infer.model = model
    return infer


# Where a forward pass spends its time, in three groups both runtimes can be split into (per-operator profiles)
OP_GROUPS = ("linear layers", "attention", "everything else")
# PyTorch operators by name (eager ATen, oneDNN/MKL extern kernels, Inductor's calls): the first group whose
# keyword an operator's name contains; Inductor's fused C++ kernels (norms, GELU, adds, quantize) fall to the last
_TORCH_GROUPS = (("attention", ("scaled_dot_product", "bmm", "softmax")),
                 ("linear layers", ("linear", "addmm", "aten::mm", "mkl", "conv")))
# OpenVINO CPU plugin layer types; a fused `Subgraph` counts as attention when it holds a softmax
_OPENVINO_GROUPS = {"FullyConnected": "linear layers", "FullyConnectedQuantizedLegacy": "linear layers",
                    "Convolution": "linear layers", "MatMul": "attention", "Softmax": "attention",
                    "SoftMax": "attention", "ScaledDotProductAttention": "attention"}


def torch_group(op_name: str) -> str:
    """The OP_GROUPS group of a PyTorch profiler event name."""
    name = op_name.lower()
    return next((group for group, keys in _TORCH_GROUPS if any(k in name for k in keys)), OP_GROUPS[-1])


@contextlib.contextmanager
def _native_stderr_off():
    """File descriptor 2 to /dev/null for the block: the profiler's C++ side (kineto) writes its start/stop lines and
    a 'gpuGetDeviceCount failed' line on a CPU-only machine straight to it, whatever KINETO_LOG_LEVEL says."""
    import os
    import sys
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def torch_op_ms(fn, x, iters: int = 3) -> dict[str, float]:
    """Milliseconds per call of `fn(x)` in each OP_GROUPS group: torch.profiler's self CPU time per operator,
    summed by group, over `iters` calls after one warm-up call."""
    import torch
    fn(x)
    with _native_stderr_off(), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(iters):
            fn(x)
    split = dict.fromkeys(OP_GROUPS, 0.0)
    for event in prof.key_averages():
        split[torch_group(event.key)] += event.self_cpu_time_total / 1e3 / iters
    return split


def openvino_op_ms(compiled_model, x, iters: int = 3) -> dict[str, float]:
    """Milliseconds per call in each OP_GROUPS group from OpenVINO's per-layer counters: `compiled_model` must be
    compiled with {"PERF_COUNT": True}; each request's `profiling_info` gives every executed layer's time."""
    if str(compiled_model.get_property("PERF_COUNT")).upper() not in ("YES", "TRUE"):  # 'NO' by default
        raise RuntimeError('openvino_op_ms needs a model compiled with {"PERF_COUNT": True}: without it no layer is timed')
    fused_attention = {op.get_friendly_name() for op in compiled_model.get_runtime_model().get_ops()
                       if "softmax" in op.get_rt_info()["originalLayersNames"].astype(str).lower()}
    request = compiled_model.create_infer_request()
    request.infer({0: x.numpy()})
    split = dict.fromkeys(OP_GROUPS, 0.0)
    for _ in range(iters):
        request.infer({0: x.numpy()})
        for layer in request.profiling_info:
            group = "attention" if layer.node_name in fused_attention else _OPENVINO_GROUPS.get(layer.node_type, OP_GROUPS[-1])
            split[group] += layer.real_time.total_seconds() * 1e3 / iters
    return split


def gap_split(slower: dict[str, float], faster: dict[str, float]) -> tuple[str, float, float]:
    """(group, its difference in ms, its share of the whole difference) for the group where `slower` loses most
    time against `faster` (two OP_GROUPS splits)."""
    diffs = {g: slower[g] - faster[g] for g in OP_GROUPS}
    group = max(diffs, key=diffs.get)
    total = sum(slower.values()) - sum(faster.values())
    return group, diffs[group], diffs[group] / total if total > 0 else float("nan")


# OP_GROUPS as they read inside a sentence ("PyTorch lost the most in ...")
GROUP_PHRASES = {"linear layers": "the linear layers", "attention": "attention",
                 "everything else": "the ops outside the linear layers and attention"}


def ms_text(ms: float) -> str:
    """Milliseconds to 3 significant figures ('0.876', '1.80', '12.7'); from 100 up, whole ms ('1,234')."""
    return f"{ms:#.3g}" if abs(ms) < 99.95 else f"{ms:,.0f}"


def profile_disagrees(pytorch: dict[str, float], runtime: dict[str, float], timed) -> bool:
    """Whether two profiled splits' totals order PyTorch and the runtime against the timed verdict `timed` (a
    Finding of the runtime's row against PyTorch's): a profiled call carries the profiler's own overhead."""
    ours, theirs = sum(pytorch.values()), sum(runtime.values())
    return (timed.verdict == "faster" and theirs >= ours) or (timed.verdict == "slower" and theirs <= ours)


def profile_note(pytorch: dict[str, float], runtime: dict[str, float], timed, name: str = "OpenVINO") -> str:
    """A profile table's note: why its totals cannot be read where they disagree with the timing ('' elsewhere)."""
    if not profile_disagrees(pytorch, runtime, timed):
        return ""
    return (f"the profile's totals disagree with the timing here (timed, {name} was {timed.verdict}, "
            f"{timed.ratio:.2f}×): a profiled call is not a timed one; read the split, not the totals")


def gap_said(case: str, pytorch: dict[str, float], runtime: dict[str, float], timed=None,
             name: str = "OpenVINO") -> str:
    """One profiled case in a sentence: where PyTorch lost the most time against the runtime `name` (two
    OP_GROUPS splits, ms per profiled call to 3 significant figures), and, where the totals disagree with the
    timed verdict `timed` (a Finding of the runtime's row against PyTorch's), that they do."""
    group, diff, share = gap_split(pytorch, runtime)
    if diff <= 0:
        text = f"{case}: PyTorch lost time to {name} in none of the profile's groups"
    else:
        part = f", {share:.0%} of the profiled difference" if 0 < share <= 1 else ""
        text = (f"{case}: PyTorch lost the most in {GROUP_PHRASES.get(group, group)} ({ms_text(pytorch[group])} "
                f"ms against {name}'s {ms_text(runtime[group])} ms per profiled call{part})")
    if timed is not None and profile_disagrees(pytorch, runtime, timed):
        text += (f", though the profile's totals (PyTorch {ms_text(sum(pytorch.values()))} ms, {name} "
                 f"{ms_text(sum(runtime.values()))} ms) disagree with the timing, where {name} was {timed.verdict} "
                 f"({timed.ratio:.2f}×): a profiled call is not a timed one, so read the split, not the totals")
    return text
