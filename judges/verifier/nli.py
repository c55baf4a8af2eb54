"""An operator-provided NLI cross-encoder on onnxruntime.

The operator points ``VerifierConfig.nli_model_dir`` at a folder holding

* ``model.onnx`` -- a sequence-classification model with 3 labels, as ``optimum``
  exports it (e.g. ``optimum-cli export onnx --model cross-encoder/nli-deberta-v3-xsmall``);
* ``tokenizer.json`` -- the fast tokenizer (its pair template adds the special tokens);
* ``config.json`` -- ``id2label`` gives the label order (``{"0": "contradiction",
  "1": "entailment", "2": "neutral"}`` for the cross-encoder NLI models; other models use
  other orders, which is why it is read and never assumed).

Inputs are fed by name: whichever of ``input_ids``, ``attention_mask`` and
``token_type_ids`` the model declares, in the integer type it declares. The premise is the
source text and the hypothesis the claim (``(source, claim)``), the order the NLI
cross-encoders were trained on. Logits are turned into probabilities with a softmax.
Pairs are padded per batch and run ``batch_size`` at a time.

Nothing is downloaded: a missing file is an :class:`NLIModelError`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "NLIModel",
    "NLIModelError",
    "NLIScores",
    "exact_int8_needed",
    "forget_nli_models",
    "get_nli_model",
    "session_options",
]


class NLIModelError(RuntimeError):
    """The configured NLI folder is missing a file or is not a 3-way NLI model."""


@dataclass(frozen=True)
class NLIScores:
    entailment: float
    neutral: float
    contradiction: float

    def as_dict(self) -> dict[str, float]:
        return {"entailment": self.entailment, "neutral": self.neutral, "contradiction": self.contradiction}


_INT_TYPES = {"tensor(int64)": np.int64, "tensor(int32)": np.int32}

#: onnxruntime's session entry (``kOrtSessionOptionsAvx2PrecisionMode``) that makes it multiply
#: int8 exactly on an x86 CPU without VNNI, by a slower uint8 x uint8 kernel
EXACT_INT8_ENTRY = "session.x64quantprecision"
#: CPU flags (Linux ``/proc/cpuinfo``) of the instructions that sum uint8 x int8 products in 32 bits
VNNI_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})


def exact_int8_needed(cpuinfo: str | None = None) -> bool:
    """Whether onnxruntime must be asked for exact int8 products here (verifier_lab/NOTES.md, "Verdicts
    and the CPU"). Both packaged graphs multiply uint8 activations by int8 weights; without VNNI,
    x86 kernels add each pair of products in saturating 16 bits, and the verdicts would depend on
    the CPU. With VNNI they are exact already, and the exact kernel would only cost time (1.5x
    measured on an AVX512-VNNI EPYC), so it is asked for only where the flags lack VNNI, or cannot
    be read (elsewhere than x86 onnxruntime ignores the entry)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
        except OSError:
            return True
    flags = next((line.partition(":")[2].split() for line in cpuinfo.splitlines() if line.startswith("flags")), None)
    return flags is None or not VNNI_FLAGS & set(flags)


_EXACT_INT8 = exact_int8_needed()


def session_options(threads: int, exact_int8: bool | None = None):
    """The onnxruntime options both packaged models run under: ``threads`` intra-op threads, one
    inter-op, every graph optimisation, and exact int8 products where this CPU needs them
    (``exact_int8`` None) or where asked (True: the benchmark's and the tests' comparison)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = max(1, int(threads))
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if _EXACT_INT8 if exact_int8 is None else exact_int8:
        opts.add_session_config_entry(EXACT_INT8_ENTRY, "1")
    return opts


def _label_kind(name: str) -> str | None:
    n = name.strip().lower()
    if n.startswith("entail"):
        return "entailment"
    if n.startswith("contradict") or n == "contradiction":
        return "contradiction"
    if n.startswith("neutral") or n in ("not_entailment",):
        return "neutral"
    return None


class NLIModel:
    def __init__(
        self,
        model_dir: str | Path,
        threads: int = 1,
        batch_size: int = 16,
        max_length: int | None = None,
        exact_int8: bool | None = None,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        t0 = time.perf_counter()
        self.model_dir = Path(model_dir)
        files = {name: self.model_dir / name for name in ("model.onnx", "tokenizer.json", "config.json")}
        absent = [name for name, path in files.items() if not path.is_file()]
        if absent:
            raise NLIModelError(f"{self.model_dir}: missing {', '.join(absent)}")
        config = json.loads(files["config.json"].read_text(encoding="utf-8"))
        id2label = config.get("id2label")
        if not isinstance(id2label, dict) or not id2label:
            raise NLIModelError(f"{files['config.json']}: no id2label")
        self.labels: dict[int, str] = {int(k): str(v) for k, v in id2label.items()}
        self.index: dict[str, int] = {}
        for idx, name in self.labels.items():
            kind = _label_kind(name)
            if kind is not None:
                self.index[kind] = idx
        if "entailment" not in self.index or "contradiction" not in self.index:
            raise NLIModelError(f"id2label {self.labels} does not name entailment and contradiction")
        self.num_labels = len(self.labels)

        self.tokenizer = Tokenizer.from_file(str(files["tokenizer.json"]))
        limit = max_length or min(int(config.get("max_position_embeddings") or 512), 512)
        self.max_length = limit
        self.tokenizer.enable_truncation(max_length=limit)
        pad_id = config.get("pad_token_id")
        if self.tokenizer.padding:
            pad_id = self.tokenizer.padding.get("pad_id", pad_id)
        if pad_id is None:
            for candidate in ("[PAD]", "<pad>", "<PAD>"):
                tid = self.tokenizer.token_to_id(candidate)
                if tid is not None:
                    pad_id = tid
                    break
        self.pad_id = int(pad_id or 0)
        self.tokenizer.no_padding()

        try:
            self.session = ort.InferenceSession(
                str(files["model.onnx"]),
                sess_options=session_options(threads, exact_int8),
                providers=["CPUExecutionProvider"],
            )
        except Exception as exc:
            raise NLIModelError(f"cannot load {files['model.onnx']}: {exc}") from exc
        self.inputs = {i.name: _INT_TYPES.get(i.type, np.int64) for i in self.session.get_inputs()}
        unknown = set(self.inputs) - {"input_ids", "attention_mask", "token_type_ids"}
        if unknown or "input_ids" not in self.inputs:
            raise NLIModelError(f"unsupported model inputs {sorted(self.inputs)}")
        outputs = self.session.get_outputs()
        self.output_name = next((o.name for o in outputs if o.name == "logits"), outputs[0].name)
        self.batch_size = max(1, int(batch_size))
        self.threads = max(1, int(threads))
        self.runs = 0
        self.load_time_ms = (time.perf_counter() - t0) * 1000.0

    def _feed(self, encodings: list) -> dict[str, np.ndarray]:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for r, e in enumerate(encodings):
            n = len(e.ids)
            ids[r, :n] = e.ids
            mask[r, :n] = 1
            types[r, :n] = e.type_ids
        arrays = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        return {name: arrays[name].astype(dtype, copy=False) for name, dtype in self.inputs.items()}

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Softmax probabilities, shape (len(pairs), num_labels), columns in id2label order.

        ``pairs`` are (premise, hypothesis) = (source text, claim)."""
        if not pairs:
            return np.zeros((0, self.num_labels), dtype=np.float32)
        encodings = self.tokenizer.encode_batch([(p, h) for p, h in pairs])
        order = sorted(range(len(encodings)), key=lambda k: len(encodings[k].ids))
        out = np.zeros((len(pairs), self.num_labels), dtype=np.float64)
        for b in range(0, len(order), self.batch_size):
            chunk = order[b : b + self.batch_size]
            logits = self.session.run([self.output_name], self._feed([encodings[k] for k in chunk]))[0]
            self.runs += 1
            logits = np.asarray(logits, dtype=np.float64).reshape(len(chunk), -1)
            logits = logits - logits.max(axis=1, keepdims=True)
            exp = np.exp(logits)
            out[chunk] = exp / exp.sum(axis=1, keepdims=True)
        return out

    def predict(self, pairs: Sequence[tuple[str, str]]) -> list[NLIScores]:
        probs = self.probabilities(pairs)
        neutral = self.index.get("neutral")
        result = []
        for row in probs:
            e = float(row[self.index["entailment"]])
            c = float(row[self.index["contradiction"]])
            n = float(row[neutral]) if neutral is not None else max(0.0, 1.0 - e - c)
            result.append(NLIScores(e, n, c))
        return result


_MODELS: dict[tuple[str, int, int], NLIModel] = {}
_LOCK = threading.Lock()


def get_nli_model(model_dir: str | Path, threads: int = 1, batch_size: int = 16) -> NLIModel:
    """The process-wide NLI model for this folder, thread count and batch size (loaded on first use)."""
    key = (str(Path(model_dir).resolve()), max(1, int(threads)), max(1, int(batch_size)))
    model = _MODELS.get(key)
    if model is not None:
        return model
    with _LOCK:
        model = _MODELS.get(key)
        if model is None:
            model = NLIModel(model_dir, threads=key[1], batch_size=key[2])
            _MODELS[key] = model
    return model


def forget_nli_models(keep: str | Path | None = None) -> None:
    """Drop the loaded models of every folder but ``keep`` (an installed model replaced another)."""
    kept = str(Path(keep).resolve()) if keep else None
    with _LOCK:
        for key in [k for k in _MODELS if k[0] != kept]:
            del _MODELS[key]
