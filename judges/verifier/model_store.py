"""Operator-installed NLI cross-encoders: validate a model folder, try it on the smoke set, copy it
into the model store and make it the one that runs (``python manage.py verifier_model``).

The store is a folder shared by every process that checks claims (web and worker)::

    STORE/models/<sha256 of model.onnx, 12 hex>/   model.onnx, tokenizer.json, config.json, ...
    STORE/active.json                               which of them runs, with its smoke figures

``active.json`` is replaced atomically (written beside it, then renamed), and a running process
reads it again when its modification time changes (one ``stat`` per check), so an install or a reset
reaches the running servers at their next check without a restart. A model folder is never
written in place: a new model is a new folder, so a check already running finishes on the model it
started with. Pure: paths in, values out; no Django.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .nli import NLIModel, NLIModelError, _label_kind, forget_nli_models

SMOKE_SET = Path(__file__).resolve().parent / "smoke" / "pairs.jsonl"
ACTIVE = "active.json"
REQUIRED_INPUT = "input_ids"
ALLOWED_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
NLI_LABELS = ("entailment", "contradiction", "neutral")
DEFAULT_MIN_ACCURACY = 0.6


class ModelRefused(Exception):
    """The folder is not an NLI cross-encoder the verifier can run; nothing was changed."""


class StoreUnwritable(ModelRefused):
    """The model is fine, but the store cannot be written (permissions, a read-only or full disk)."""


@dataclass(frozen=True)
class SmokeResult:
    accuracy: float
    ms_per_pair: float
    pairs: int
    per_label: dict[str, str]  # "8/10"


def _read_config(src: Path) -> dict[str, str]:
    path = src / "config.json"
    if not path.is_file():
        raise ModelRefused(f"missing config.json: {src} has no config.json (its id2label names the labels)")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelRefused(f"unreadable config.json: {exc}") from exc
    id2label = config.get("id2label") if isinstance(config, dict) else None
    if not isinstance(id2label, dict) or not id2label:
        raise ModelRefused("config.json has no id2label: the label of each logit must be named, never assumed")
    labels = {str(k): str(v) for k, v in id2label.items()}
    kinds = {k: _label_kind(v) for k, v in labels.items()}
    unknown = sorted(v for k, v in labels.items() if kinds[k] is None)
    named = set(kinds.values())
    if unknown or not {"entailment", "contradiction"} <= named or len(named) != len(labels):
        raise ModelRefused(
            f"unknown labels: config.json id2label is {labels}; an NLI cross-encoder names each of its "
            "logits entailment, contradiction or neutral, once"
        )
    return labels


def validate(src: Path) -> dict[str, Any]:
    """What the folder holds (labels, inputs), or :class:`ModelRefused` naming what is wrong."""
    if not src.is_dir():
        raise ModelRefused(f"no such directory: {src}")
    if not (src / "model.onnx").is_file():
        raise ModelRefused(f"missing model.onnx: {src} has no model.onnx (an ONNX export writes it)")
    if not (src / "tokenizer.json").is_file():
        raise ModelRefused(
            f"missing tokenizer: {src} has no tokenizer.json (the fast tokenizer, which an Optimum export "
            "writes beside the model)"
        )
    try:
        from tokenizers import Tokenizer

        Tokenizer.from_file(str(src / "tokenizer.json"))
    except Exception as exc:
        raise ModelRefused(f"unreadable tokenizer: tokenizer.json does not load ({exc})") from exc
    labels = _read_config(src)
    import onnxruntime as ort

    try:
        session = ort.InferenceSession(str(src / "model.onnx"), providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise ModelRefused(f"unreadable model.onnx: onnxruntime cannot load it ({exc})") from exc
    inputs = [i.name for i in session.get_inputs()]
    if REQUIRED_INPUT not in inputs or set(inputs) - set(ALLOWED_INPUTS):
        raise ModelRefused(
            f"wrong inputs: the graph takes {inputs}; an NLI cross-encoder takes input_ids, attention_mask "
            "and optionally token_type_ids"
        )
    return {"labels": labels, "inputs": inputs}


def smoke_pairs(path: Path = SMOKE_SET) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def smoke(model: NLIModel, pairs: list[dict]) -> SmokeResult:
    """Accuracy on the smoke set (the likeliest of the three labels against the pair's) and the
    time a pair takes, one pair at a time as a claim is checked."""
    model.predict([(pairs[0]["premise"], pairs[0]["hypothesis"])])  # the first run allocates
    started = time.perf_counter()
    scores = [model.predict([(p["premise"], p["hypothesis"])])[0] for p in pairs]
    ms = 1000 * (time.perf_counter() - started) / len(pairs)
    right: dict[str, list[int]] = {label: [0, 0] for label in NLI_LABELS}
    for p, s in zip(pairs, scores):
        said = max(s.as_dict().items(), key=lambda kv: kv[1])[0]
        right[p["label"]][1] += 1
        right[p["label"]][0] += said == p["label"]
    correct = sum(ok for ok, _ in right.values())
    return SmokeResult(
        accuracy=round(correct / len(pairs), 3),
        ms_per_pair=round(ms, 2),
        pairs=len(pairs),
        per_label={label: f"{ok}/{n}" for label, (ok, n) in right.items() if n},
    )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_active(store: Path, record: dict | None) -> None:
    target = store / ACTIVE
    if record is None:
        target.unlink(missing_ok=True)
        return
    fd, tmp = tempfile.mkstemp(dir=store, prefix=".active-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, target)


def _copy_into(src: Path, dest: Path, store: Path) -> None:
    """Copy the folder's files under a temporary name, then rename: a half-copied model is never a model."""
    staging = Path(tempfile.mkdtemp(dir=store, prefix=".installing-"))
    try:
        for item in src.iterdir():
            if item.is_file():
                shutil.copy2(item, staging / item.name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def install(src: Path, store: Path, *, min_accuracy: float = DEFAULT_MIN_ACCURACY) -> tuple[dict, SmokeResult]:
    """Validate ``src``, run it on the smoke set, copy it into ``store`` and make it the one that runs.
    Any refusal raises :class:`ModelRefused` before the store is touched."""
    src = src.resolve()
    found = validate(src)
    try:
        model = NLIModel(src)
        result = smoke(model, smoke_pairs())
    except NLIModelError as exc:
        raise ModelRefused(str(exc)) from exc
    except Exception as exc:  # a graph that loads but cannot run a pair: wrong shapes, wrong types
        raise ModelRefused(f"the model does not run on a pair: {exc}") from exc
    if result.accuracy < min_accuracy:
        raise ModelRefused(
            f"accuracy {result.accuracy:.2f} on the {result.pairs} smoke pairs is below the floor {min_accuracy:.2f} "
            f"({', '.join(f'{k} {v}' for k, v in result.per_label.items())}); is id2label in the order the weights "
            "were trained in?"
        )
    sha = _sha256(src / "model.onnx")
    dest = store / "models" / sha[:12]
    try:
        store.mkdir(parents=True, exist_ok=True)
        if not dest.is_dir():
            _copy_into(src, dest, store)
    except OSError as exc:
        raise StoreUnwritable(f"cannot write the model store {store}: {exc.strerror or exc}") from exc
    record = {
        "path": str(dest),
        "source": str(src),
        "sha256": sha,
        "labels": found["labels"],
        "inputs": found["inputs"],
        "smoke": {
            "accuracy": result.accuracy,
            "ms_per_pair": result.ms_per_pair,
            "pairs": result.pairs,
            "per_label": result.per_label,
        },
        "installed_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    try:
        _write_active(store, record)
    except OSError as exc:
        raise StoreUnwritable(f"cannot write {store / ACTIVE}: {exc.strerror or exc}") from exc
    return record, result


def reset(store: Path) -> bool:
    """Back to the packaged verifier; the installed folders stay (an install of the same model is then
    only a switch). Whether a model was active."""
    was = read_active(store) is not None
    if store.is_dir():
        _write_active(store, None)
    return was


def read_active(store: Path | None) -> dict | None:
    if store is None:
        return None
    try:
        record = json.loads((store / ACTIVE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("path"), str) else None


_cache: dict[str, tuple[int, str | None]] = {}
_cache_lock = threading.Lock()


def active_model_dir(store: Path | None) -> str | None:
    """The installed model's folder, read again only when ``active.json`` changed (one stat a call)."""
    if store is None:
        return None
    key = str(store)
    try:
        mtime = (store / ACTIVE).stat().st_mtime_ns
    except OSError:
        mtime = -1
    cached = _cache.get(key)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    with _cache_lock:
        record = read_active(store) if mtime != -1 else None
        path = record["path"] if record else None
        if cached is not None and cached[1] != path:
            forget_nli_models(keep=path)  # the model switched from: its memory goes back
        _cache[key] = (mtime, path)
    return path
