"""The recipes the book teaches. Each returns what it made and whether it actually engaged."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from vitlab import ipex as ipex_guard
from vitlab.contract.text import first_line
from vitlab.device import supports_bf16


@dataclass
class Applied:
    """The result of a recipe: the (possibly new) model/optimizer and whether it did anything."""

    model: Any
    engaged: bool
    reason: str
    optimizer: Any = None
    details: dict = field(default_factory=dict)  # recipe-specific facts, e.g. {"qdq_nodes": 150}


def channels_last(model: nn.Module) -> Applied:
    """Store 4-D weights as NHWC; in a ViT/Swin only the patch-embedding convolution has any."""
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    model = model.to(memory_format=torch.channels_last)
    linears = sum(isinstance(m, nn.Linear) for m in model.modules())
    if not convs:
        return Applied(model, False, "no convolutions: channels_last changes nothing")
    return Applied(model, True, f"touches {len(convs)} conv layer(s) (the patch embedding); "
                                f"the {linears} Linear layers that do the work are unaffected")


def autocast(device: torch.device | str, dtype: torch.dtype = torch.bfloat16):
    """torch.amp.autocast for `device` (the portable replacement for torch.cuda.amp)."""
    kind = torch.device(device).type
    return torch.autocast(device_type=kind, dtype=dtype)


def bf16_note(device: torch.device | str) -> tuple[bool, str]:
    """Whether bf16 runs natively on `device`, and why not when it does not."""
    if supports_bf16(device):
        return True, "native bf16"
    isa = torch.backends.cpu.get_cpu_capability()
    return False, (f"no native bf16 on this CPU ({isa}: no AVX512-BF16/AMX); bf16 is emulated "
                   "with fp32 conversions and is expected to be slower")


def compile_model(model: nn.Module, mode: str | None = "default", **kwargs) -> Applied:
    """torch.compile(model, mode); `mode=None` or 'eager' returns the model unchanged."""
    if mode in (None, "eager"):
        return Applied(model, False, "eager: not compiled")
    compiled = torch.compile(model, mode=None if mode == "default" else mode, **kwargs)
    return Applied(compiled, True, f"torch.compile mode={mode}")


def compile_report(mode: str, device: torch.device | str | None = None) -> tuple[bool, str]:
    """After a compiled model has run: did CUDA graphs engage, and how many graph breaks were there?

    Call torch._dynamo.reset() and torch._dynamo.utils.counters.clear() before compiling.
    Inductor counts each graph it refuses to capture in counters["inductor"]["cudagraph_skips"]
    (checked on torch 2.8: 1 per graph on a CPU device, for reduce-overhead and max-autotune).
    """
    from torch._dynamo.utils import counters
    breaks = sum(counters["graph_break"].values())
    skips = counters["inductor"].get("cudagraph_skips", 0)
    wants_graphs = mode in ("reduce-overhead", "max-autotune")
    note = f"{breaks} graph break(s)"
    if not wants_graphs:
        return True, note
    detail = graphs_detail(skips, None if device is None else torch.device(device).type)
    if detail:
        return False, f"CUDA graphs not engaged ({detail}); {note}"
    return True, f"CUDA graphs engaged; {note}"


def graphs_detail(skips: int, kind: str | None) -> str | None:
    """Why CUDA graphs did not engage, from Inductor's count of graphs it refused (`cudagraph_skips`) and the device
    type (None: not known); None where they engaged."""
    where = "e.g. on a CPU device" if kind is None else f"they need a CUDA/ROCm device; this is {kind}"
    if skips:
        return f"Inductor skipped them {skips}x: {where}"
    return where if kind not in (None, "cuda") else None


def autotune_why(autotuned: int, kind: str | None) -> str:
    """Why nothing was autotuned, as a bracket to follow the count (' (on CPU ...)'), or '' where nothing needs it."""
    return " (on CPU Inductor autotunes GEMMs only with freezing=True)" if autotuned == 0 and kind == "cpu" else ""


def ipex_optimize(model: nn.Module, optimizer=None, dtype: torch.dtype | None = None, **kwargs) -> Applied:
    """ipex.optimize(model[, optimizer][, dtype]) when IPEX is usable; otherwise the model unchanged.

    On CPUs without AVX512BW/VL/DQ or AVX-NE-CONVERT (e.g. AVX2-only) IPEX refuses bf16 weight prepacking; we retry with
    weights_prepack=False and say so.
    """
    ipex = ipex_guard.load()
    if ipex is None:
        return Applied(model, False, ipex_guard.status(), optimizer)
    args = dict(dtype=dtype, **kwargs)
    if optimizer is not None:
        args["optimizer"] = optimizer
    note = ""
    try:
        out = ipex.optimize(model, **args)
    except (AssertionError, RuntimeError) as error:
        if "weights_prepack" not in str(error):
            return Applied(model, False, f"ipex.optimize failed: {first_line(error)}", optimizer)
        out = ipex.optimize(model, weights_prepack=False, **args)
        note = "; weight prepacking refused on this CPU (needs AVX512BW/VL/DQ or AVX-NE-CONVERT), ran without it"
    model, optimizer = out if optimizer is not None else (out, None)
    isa = torch.backends.cpu.get_cpu_capability()
    return Applied(model, True, f"ipex.optimize dtype={dtype or torch.float32} on {isa}{note}", optimizer)


def _graph_kinds(graph) -> list[str]:
    """Every operator kind in a TorchScript graph, fused subgraphs' blocks included."""
    kinds = []
    for node in graph.nodes():
        kinds.append(node.kind())
        for block in node.blocks():
            kinds += _graph_kinds(block)
    return kinds


def jit_int8_ops(traced, example: torch.Tensor) -> tuple[int, int]:
    """(quantize/dequantize ops, oneDNN fusion groups) of a traced, frozen INT8 TorchScript module after its
    warm-up calls: no quantize ops means INT8 did not engage."""
    qdq = sum("quantize" in kind for kind in _graph_kinds(traced.graph))
    with torch.no_grad():
        return qdq, sum("FusionGroup" in kind for kind in _graph_kinds(traced.graph_for(example)))


def ipex_int8(model: nn.Module, calibration, example: torch.Tensor, qconf_path=None, load_qconf=None) -> Applied:
    """IPEX static INT8: prepare (default static qconfig), calibrate on `calibration` batches,
    convert, torch.jit.trace + freeze. Saves IPEX's qconf JSON to `qconf_path` when given;
    `load_qconf` (a saved qconf JSON) sets the tuned scales instead (pass calibration=[])."""
    ipex = ipex_guard.load()
    if ipex is None:
        return Applied(model, False, ipex_guard.status())
    try:
        from intel_extension_for_pytorch.quantization import convert, prepare
        mapping = ipex.quantization.default_static_qconfig_mapping
        prepared = prepare(model.eval(), mapping, example_inputs=example, inplace=False)
        if load_qconf is not None:  # the scales a calibration run saved: no calibration data needed
            prepared.load_qconf_summary(qconf_summary=str(load_qconf))
        batches = 0
        with torch.no_grad():
            for images in calibration:  # observers record each activation's range
                prepared(images)
                batches += 1
            if qconf_path is not None:
                prepared.save_qconf_summary(qconf_summary=str(qconf_path))
            traced = torch.jit.freeze(torch.jit.trace(convert(prepared), example, check_trace=False))
            for _ in range(2):  # the profiling executor fuses int8 ops on the first runs
                traced(example)
            qdq, groups = jit_int8_ops(traced, example)
    except Exception as error:  # an IPEX that cannot quantize this model must not stop a notebook
        return Applied(model, False, f"IPEX INT8 failed: {first_line(error)}")
    details = {"qdq_nodes": qdq, "fusion_groups": groups, "calibration_batches": batches, "qconf_path": qconf_path}
    if not qdq:
        return Applied(traced, False, "IPEX INT8 inserted no quantize/dequantize ops (model runs in fp32)",
                       details=details)
    isa = torch.backends.cpu.get_cpu_capability()
    scales = f"scales loaded from {Path(load_qconf).name}" if load_qconf else f"calibrated on {batches} batch(es)"
    return Applied(traced, True, f"IPEX static INT8 on {isa}: {qdq} quantize/dequantize ops, fused into {groups} "
                                 f"oneDNN Graph partition(s); {scales}", details=details)


def _pt2e_api(prefer: str = "auto"):
    """(prepare_pt2e, convert_pt2e, x86 quantizer module, source): torchao's PT2E when present, else torch.ao."""
    why = "not asked for"
    if prefer in ("auto", "torchao"):
        try:
            from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
            from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer
            return prepare_pt2e, convert_pt2e, x86_inductor_quantizer, "torchao.quantization.pt2e"
        except Exception as error:  # absent, or a torchao built for another torch
            if prefer == "torchao":
                raise
            why = first_line(error)
    from torch.ao.quantization.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torch.ao.quantization.quantizer import x86_inductor_quantizer
    return prepare_pt2e, convert_pt2e, x86_inductor_quantizer, f"torch.ao.quantization (torchao: {why})"


class FrozenCompiled(nn.Module):
    """torch.compile(model) for inference, called under no_grad with Inductor's freezing on: weights become
    constants, so oneDNN weight prepacking and int8 fusions fold in (Dynamo reads the flag at trace time).
    Static shapes by default (dynamic=False): each new batch size compiles once. With dynamic=True the first
    input's batch dimension is marked unbacked (torch._dynamo.mark_unbacked) at every call: Dynamo would otherwise
    specialise a batch of 1 (sizes 0 and 1 always are), so one graph, with a symbolic batch, serves every size."""

    def __init__(self, model: nn.Module, dynamic: bool | None = False, **compile_kwargs):
        super().__init__()
        self.dynamic = dynamic
        self.compiled = torch.compile(model, dynamic=dynamic, **compile_kwargs)

    def forward(self, *args):
        import torch._inductor.config as inductor_config
        if self.dynamic and args and isinstance(args[0], torch.Tensor) and args[0].dim():
            # the mark is an attribute of the tensor object: put it on a detached alias, never on the caller's tensor
            # (a marked input would make every compiled model it is passed to afterwards compile a symbolic batch)
            args = (args[0].detach(), *args[1:])
            torch._dynamo.decorators.mark_unbacked(args[0], 0)
        with torch.no_grad(), inductor_config.patch(freezing=True):
            return self.compiled(*args)


def inductor_gemm_route(dynamic: bool, features: tuple[int, int] = (768, 3072), tokens: int = 197) -> str:
    """Which GEMM Inductor's generated code calls for an fp32 Linear-GELU-Linear block of ViT-B's sizes, compiled
    with freezing (FrozenCompiled) and static or dynamic shapes: oneDNN's packed linear, MKL's packed GEMM or
    ATen's plain mm. It reads the generated code (torch._inductor.utils.run_and_get_code), not a timing."""
    from torch._inductor.utils import run_and_get_code
    torch._dynamo.reset()
    block = nn.Sequential(nn.Linear(*features), nn.GELU(), nn.Linear(*reversed(features))).eval()
    _, code = run_and_get_code(FrozenCompiled(block, dynamic=dynamic), torch.randn(2, tokens, features[0]))
    torch._dynamo.reset()
    code = "\n".join(code)
    if "_linear_pointwise" in code:
        return "oneDNN's packed linear"
    return "MKL's packed GEMM" if "mkl_linear" in code else "ATen's mm"


def count_qdq(graph_module) -> int:
    """Quantize/dequantize nodes in an FX graph; 0 after convert_pt2e means nothing was quantized."""
    return sum(node.op == "call_function" and "quantized_decomposed" in str(node.target)
               and "quantize_per" in str(node.target) for node in graph_module.graph.nodes)


def pt2e_int8(model: nn.Module, example: torch.Tensor, calibration, compile: bool = True,
              prefer: str = "auto") -> Applied:
    """PT2E static INT8: strict torch.export (batch dynamic) -> X86InductorQuantizer -> prepare_pt2e ->
    calibrate -> convert_pt2e -> torch.compile with freezing (Inductor's int8 kernels)."""
    if prefer not in ("auto", "torchao", "torch.ao"):
        raise ValueError(f"unknown PT2E source {prefer!r}: choose auto, torchao or torch.ao")
    try:
        prepare_pt2e, convert_pt2e, xiq, source = _pt2e_api(prefer)
        if example.shape[0] < 2:  # a batch of 1 would be specialised: export with 2 so the batch stays dynamic
            example = torch.cat([example, example])
        batch = torch.export.Dim("batch", min=1, max=1 << 16)
        # strict=True: with non-strict export the quantizer annotated nothing here (a silent no-op).
        exported = torch.export.export(model.eval(), (example,), dynamic_shapes=({0: batch},), strict=True)
        quantizer = xiq.X86InductorQuantizer().set_global(xiq.get_default_x86_inductor_quantization_config())
        prepared = prepare_pt2e(exported.module(), quantizer)
        batches = 0
        with torch.no_grad():
            for images in calibration:
                prepared(images)
                batches += 1
        converted = convert_pt2e(prepared)
    except Exception as error:
        return Applied(model, False, f"PT2E INT8 failed: {first_line(error)}")
    nodes = count_qdq(converted)
    details = {"qdq_nodes": nodes, "source": source, "calibration_batches": batches, "quantized": converted}
    if nodes == 0:
        return Applied(converted, False, f"X86InductorQuantizer annotated nothing: 0 quantize/dequantize "
                                         f"nodes after convert_pt2e ({source})", details=details)
    applied = Applied(converted, True, _pt2e_reason(details, compiled=False), details=details)
    return pt2e_compiled(applied) if compile else applied


def _pt2e_reason(details: dict, compiled: bool) -> str:
    how = "compiled with torch.compile (freezing on)" if compiled else "not compiled (reference fp32 q/dq math)"
    return (f"PT2E INT8 via {details['source']}: {details['qdq_nodes']} quantize/dequantize nodes after convert_pt2e, "
            f"calibrated on {details['calibration_batches']} batch(es); {how}")


def pt2e_compiled(applied: Applied, **compile_kwargs) -> Applied:
    """A converted PT2E graph (pt2e_int8(..., compile=False)) compiled with freezing, its reason saying so."""
    if not applied.engaged:
        return applied
    compiled = FrozenCompiled(applied.details["quantized"], **compile_kwargs)
    return Applied(compiled, True, _pt2e_reason(applied.details, compiled=True), details=applied.details)


# ---- torch.compile modes as bench variants (chapter 02's harness) ----------------------------------------------

def mode_counters() -> dict:
    """What Inductor's counters say the last compile did: graph breaks, CUDA graphs it refused to capture, GEMMs it
    autotuned (clear torch._dynamo.utils.counters before compiling)."""
    from torch._dynamo.utils import counters
    return {"graph_breaks": sum(counters["graph_break"].values()),
            "cudagraph_skips": counters["inductor"].get("cudagraph_skips", 0),
            "autotuned_ops": counters["inductor"].get("select_algorithm_autotune", 0)}


def compile_variant(mode: str, model: nn.Module, x: torch.Tensor, device: torch.device | str, *, name: str | None = None,
                    cold: bool = True, **fields):
    """torch.compile(model, mode) as a vitlab.bench.Variant (under no_grad): compiled from a clean slate (`cold`: a
    fresh, empty Inductor cache), its first call timed as compile_s, and whether the mode's extra engaged read from
    Inductor's counters (CUDA graphs for reduce-overhead / max-autotune, autotuned GEMMs for the max-autotune modes).
    'eager' is the model itself; a mode that fails to compile is a failed variant that says why."""
    import contextlib
    import time

    from torch._dynamo.utils import counters
    from torch._inductor.utils import fresh_inductor_cache

    from vitlab.bench import Variant
    from vitlab.device import synchronize
    name = name or mode
    fields = dict(fields, mode=mode)
    counters.clear()
    cache = fresh_inductor_cache() if cold and mode != "eager" else contextlib.nullcontext()
    try:
        with cache, torch.no_grad():
            applied = compile_model(model, mode)
            synchronize(device)
            start = time.perf_counter()
            applied.model(x)
            synchronize(device)
            first_s = time.perf_counter() - start
    except Exception as error:  # a mode this backend cannot compile: a row that says why
        return Variant.fail(name, first_line(error), **fields)

    def fn(inputs, module=applied.model):
        with torch.no_grad():
            return module(inputs).clone()  # cloned: CUDA graphs reuse their output buffers
    if mode == "eager":
        return Variant(name, fn, True, "eager baseline: not compiled", fields=fields)
    engaged, reason = compile_report(mode, device)
    stats = mode_counters()
    if mode.startswith("max-autotune"):
        why = autotune_why(stats["autotuned_ops"], torch.device(device).type)
        reason += f"; {stats['autotuned_ops']} op(s) autotuned{why}"
        if stats["autotuned_ops"] == 0:  # the mode's own promise did nothing here
            engaged = False
    return Variant(name, fn, engaged, reason, compile_s=round(first_s, 3), fields=dict(fields, **stats))


@dataclass
class FreezingOutcome:
    """What max-autotune with Inductor's freezing did to one small nn.Linear: it ran (with how many GEMMs autotuned,
    how many candidate kernels failed to compile and were dropped, the max-abs diff from eager) or crashed (why)."""

    precision: str
    status: str                 # "ran" | "crashed"
    autotuned: int = 0
    rejected: int = 0
    max_diff: float | None = None
    error: str = ""

    @property
    def advice(self) -> str:
        if self.status == "crashed":
            return "unusable here as it stands"
        if self.autotuned == 0:
            return "nothing autotuned even with freezing: max-autotune adds only compile time here"
        if self.rejected == 0:
            return "the template compiled and the autotuner could choose it: worth a try for CPU inference here"
        return "some template kernels failed to compile and were dropped; the autotuner kept what compiled"


def try_freezing(device: torch.device | str, precision: str = "fp32", features: int = 192, classes: int = 1000,
                 batch: int = 8) -> FreezingOutcome:
    """max-autotune + freezing=True on one nn.Linear(features, classes), from a clean slate and a fresh cache."""
    import logging

    import torch._inductor.config as inductor_config
    from torch._dynamo.utils import counters
    from torch._inductor.utils import fresh_inductor_cache

    class Rejected(logging.Handler):  # counts the candidate kernels Inductor had to throw away
        def __init__(self):
            super().__init__(logging.ERROR)
            self.count = 0

        def emit(self, record):
            message = record.getMessage()
            self.count += "Ignoring this choice" in message or "compile error" in message

    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    linear = nn.Linear(features, classes).eval().to(device, dtype)
    probe = torch.randn(batch, features, device=device, dtype=dtype)
    logger, handler = logging.getLogger("torch._inductor.select_algorithm"), Rejected()
    logger.addHandler(handler)
    propagate, logger.propagate = logger.propagate, False
    torch._dynamo.reset()
    counters.clear()
    try:
        with fresh_inductor_cache(), torch.no_grad(), inductor_config.patch(freezing=True):
            out = torch.compile(linear, mode="max-autotune")(probe)
            diff = float((out.float() - linear(probe).float()).abs().max())
        return FreezingOutcome(precision, "ran", counters["inductor"].get("select_algorithm_autotune", 0),
                               handler.count, diff)
    except Exception as error:  # Dynamo wraps Inductor's error (BackendCompilerFailed): say the inner one
        inner = getattr(error, "inner_exception", None) or error.__cause__ or error
        return FreezingOutcome(precision, "crashed", error=first_line(inner))
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


class OneDNNLinear(nn.Module):
    """An inference nn.Linear through oneDNN, its weight reordered once into oneDNN's blocked layout.

    The kernel Inductor's freezing pass uses for bf16 weights (and, on recent torch, for fp32 when the batch is
    dynamic): `mkldnn._reorder_linear_weight` at load, `mkldnn._linear_pointwise` per call. An fp32 nn.Linear
    on x86 otherwise calls MKL's SGEMM, which on a non-Intel CPU may run a narrower code path than oneDNN.
    """

    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.out_features = linear.out_features
        self.packed = torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), None)
        self.bias = None if linear.bias is None else linear.bias.detach()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])
        out = torch.ops.mkldnn._linear_pointwise(flat, self.packed, self.bias, "none", [], "")
        return out.reshape(*x.shape[:-1], self.out_features)


def onednn_linears(model: nn.Module) -> Applied:
    """Every fp32 CPU nn.Linear of a copy of `model` (inference only) as a OneDNNLinear; not engaged where this
    torch has no oneDNN or the model has no such layer."""
    import copy
    if not torch.backends.mkldnn.is_available() or not hasattr(torch.ops.mkldnn, "_linear_pointwise"):
        return Applied(model, False, f"torch {torch.__version__} has no oneDNN linear kernel here")
    model = copy.deepcopy(model).eval()
    swapped = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.Linear) and child.weight.dtype == torch.float32 and child.weight.device.type == "cpu":
                setattr(parent, name, OneDNNLinear(child))
                swapped += 1
    if not swapped:
        return Applied(model, False, "no fp32 CPU nn.Linear to route through oneDNN")
    return Applied(model, True, f"{swapped} nn.Linear layers run oneDNN's fp32 GEMM (weights reordered once)",
                   details={"linears": swapped})


def mode_variants(modes, model: nn.Module, x: torch.Tensor, device: torch.device | str, precision: str, *,
                  cold: bool = True, batch: int | None = None) -> list:
    """compile_variant for each of `modes`, named 'mode=<mode>, dtype=<precision>' (chapter 02's variant names),
    labelled '<mode> <precision>' for sentences, '<mode> <precision> at batch <batch>' where `batch` is given (a
    batch sweep, whose sentences compare one batch with another; the label is not part of a row's identity)."""
    at = "" if batch is None else f" at batch {batch}"
    return [compile_variant(mode, model, x, device, name=f"mode={mode}, dtype={precision}", cold=cold,
                            dtype=precision, label=f"{mode} {precision}{at}") for mode in modes]


# ---- chapter 02's summary: its findings said as parts of sentences (the page glues them) ------------------------

# what a mode was against eager, by verdict, after "was" / "were" ("it": eager)
_AGAINST = {"faster": "faster", "within noise": "within noise of it", "slower": "slower",
            "inconclusive": "not told apart from it (inconclusive)", "failed": "not measured (failed here)",
            "skipped": "not measured (skipped here)", "not timed": "not timed"}


def said_alone(finding) -> str:
    """finding.said() without the note that said() appends on a row whose feature did not engage: for a sentence
    that says what the mode's feature did on its own (extras_said), so that the page says it once."""
    return finding.said(engaged_note=False)


def _names(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def modes_against_eager(found: list, top, said_elsewhere: tuple = ()) -> str:
    """The compiled modes against eager (`found`: each mode's finding, rows carrying `mode`) as one sentence without
    its full stop. Where `top` (vitlab.contract.findings.leader over the modes) is decided: the fastest mode and its
    finding (with why its feature did not engage, unless it is in `said_elsewhere`, modes the page's other sentences
    cover). Otherwise no mode is singled out: how many modes (which) were faster, within noise, slower, inconclusive."""
    from vitlab.contract.rows import status_of
    if top.decided:
        best = next(f for f in found if f.row.get("mode") == top.row.get("mode"))
        text = f"The fastest mode, {best.row['mode']}, was {said_alone(best)}"
        if status_of(best.row) == "not engaged" and best.row["mode"] not in said_elsewhere:
            text += f"; its feature did not engage ({' '.join(str(best.row.get('reason') or '').split())})"
        return text
    if not found:
        return "No compiled mode was compared with eager"
    against = found[0].baseline.get("label") or found[0].baseline.get("variant")
    by = " in latency" if all(f.by == "latency" for f in found) else ""
    groups = {verdict: [f.row.get("mode") for f in found if f.verdict == verdict] for verdict in _AGAINST}
    groups = {verdict: modes for verdict, modes in groups.items() if modes}
    if len(groups) == 1:
        [(verdict, modes)] = groups.items()
        every = "the one compiled mode" if len(modes) == 1 else f"all {len(modes)} compiled modes"
        return f"Against {against}{by}, {every} ({', '.join(modes)}) {'was' if len(modes) == 1 else 'were'} " \
               f"{_AGAINST[verdict]}"
    parts = [f"{len(modes)} ({', '.join(modes)}) {'was' if len(modes) == 1 else 'were'} {_AGAINST[verdict]}"
             for verdict, modes in groups.items()]
    return f"Against {against}{by}, of the {len(found)} compiled modes, {_names(parts)}"


def mode_said(finding, top) -> str:
    """One mode's finding against eager for the summary, after 'the mode was': said_alone, or, for the decided
    fastest mode that modes_against_eager already named with its finding, a pointer back to it."""
    if top.decided and finding.row.get("mode") == top.row.get("mode"):
        return "the fastest, as said above"
    return said_alone(finding)


def extras_said(row: dict, kind: str | None, after: dict | None = None) -> dict:
    """What a mode row's Inductor counters say of its extras, as phrases for a sentence, on a device of type `kind`:
    `graphs` ('engaged' | 'not engaged (Inductor skipped them 1x: ...)', after "CUDA graphs were") and `autotuned`
    ('3 op(s)' | '0 op(s) (on CPU ...)', after "autotuned"); 'not recorded' on a row without counters (a mode that
    failed). `after`: the phrases said just before for another mode; the same CUDA-graph phrase is then said short."""
    if row.get("cudagraph_skips") is None:
        return {"graphs": "not recorded", "autotuned": "nothing (the mode did not run)"}
    detail = graphs_detail(row["cudagraph_skips"], kind)
    graphs = "engaged" if detail is None else f"not engaged ({detail})"
    if after and after.get("graphs") == graphs:
        graphs = "engaged too" if detail is None else "not engaged either"
    autotuned = row.get("autotuned_ops") or 0
    return {"graphs": graphs, "autotuned": f"{autotuned} op(s){autotune_why(autotuned, kind)}"}
