"""How far a verdict's ratio moves between timing sessions on this machine, against its own interval.

    .venv/bin/python tools/session-drift.py [--sessions 8] [--budget 4]

Times the digits ViT (vit-32px) at batch 128 as chapter 05 does: eager fp32 against torch.compile (freezing),
OpenVINO fp32 (LATENCY and THROUGHPUT) and ONNX Runtime fp32 where installed, in one process, `--sessions`
back-to-back `vitlab.timing.interleaved` sessions of `--budget` seconds each. Per session it prints eager's
median and each ratio (vitlab.contract.findings.interval); at the end, for each variant, how many sessions'
intervals miss the median session's ratio. A benchmark for the repeatability work, not a test: it says whether the
machine's noise is slower than one session (ratios that move between sessions, beyond their intervals), which no
within-session interval can see.
"""
import argparse
import statistics
import tempfile
import warnings
from pathlib import Path

import torch

import vitlab.data
import vitlab.train
from vitlab import bench
from vitlab.contract import findings
from vitlab.optimize import FrozenCompiled
from vitlab.runtimes import converter_quiet, load_runtime
from vitlab.timing import interleaved

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--sessions", type=int, default=8)
parser.add_argument("--budget", type=float, default=4.0, help="seconds of timed calls per session")
args = parser.parse_args()
warnings.filterwarnings("ignore")

model = vitlab.train.trained("vit-32px", "digits").eval()
x = vitlab.data.classification_data(32, "digits").test.dataset.tensors[0][:128].contiguous()
threads, work = torch.get_num_threads(), Path(tempfile.mkdtemp(prefix="vitlab-drift-"))
candidates = {"eager": bench.inference(model), "compile": bench.inference(FrozenCompiled(model))}
ov, _ = load_runtime("openvino")
if ov is not None:
    with converter_quiet():
        ov.save_model(ov.convert_model(model, example_input=x[:1], input=[-1, 3, 32, 32]), work / "m.xml",
                      compress_to_fp16=False)
    for hint in ("LATENCY", "THROUGHPUT"):
        config = {"PERFORMANCE_HINT": hint, "INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": "f32"}
        request = ov.Core().compile_model(work / "m.xml", "CPU", config).create_infer_request()
        candidates[f"openvino {hint.lower()}"] = (
            lambda x, request=request: torch.from_numpy(request.infer({0: x.numpy()})[0]))
ort, _ = load_runtime("onnxruntime")
if ort is not None:
    torch.onnx.export(model, (x[:2],), str(work / "m.onnx"), dynamo=True, external_data=False, verbose=False,
                      input_names=["pixels"], dynamic_shapes=({0: torch.export.Dim("batch")},))
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(str(work / "m.onnx"), options, providers=["CPUExecutionProvider"])
    candidates["onnxruntime"] = lambda x: torch.from_numpy(session.run(None, {"pixels": x.numpy()})[0])
for fn in candidates.values():
    fn(x)  # compile / first call outside the sessions

found: dict[str, list[findings.Interval]] = {name: [] for name in candidates if name != "eager"}
print(f"vit-32px, batch 128, {threads} threads, {args.sessions} sessions of {args.budget:.0f} s")
for k in range(args.sessions):
    timing = interleaved(candidates, x, budget_s=args.budget, baseline="eager", first_call=False)
    as_row = lambda t: {"round_medians_ms": t.round_medians_ms, "timing_session": t.session}
    cells = [f"session {k + 1}: eager {statistics.median(timing['eager'].samples_ms):6.2f} ms"]
    for name in found:
        i = findings.interval(as_row(timing[name]), as_row(timing["eager"]), "latency")
        found[name].append(i)
        cells.append(f"{name} {i.ratio:.3f}× [{i.low:.3f}, {i.high:.3f}]")
    print(" | ".join(cells), flush=True)
for name, intervals in found.items():
    middle = statistics.median(i.ratio for i in intervals)
    missed = sum(not i.low <= middle <= i.high for i in intervals)
    spread = (max(i.ratio for i in intervals) - min(i.ratio for i in intervals)) / middle
    print(f"{name}: session ratios span {spread:.0%} of the median {middle:.3f}×; "
          f"{missed} of {len(intervals)} sessions' 95% intervals miss it")
