"""Adapt the packaged cross-encoder to claims and evidence as the verifier presents them.

    python -m verifier_lab.adapt_cross_encoder pairs      # .train/adapt_ce.jsonl (no torch)
    python -m verifier_lab.adapt_cross_encoder replay     # .train/replay.jsonl, NLI pairs
    python -m verifier_lab.adapt_cross_encoder start      # .train/nli_stage/, from git
    python -m verifier_lab.adapt_cross_encoder train      # needs the `train` extra
    python -m verifier_lab.fit_combiner                   # reads out_of_fold.json

The NLI-trained model (``train_cross_encoder``) learnt from SNLI-like pairs; the verifier asks it
about an assistant's one-sentence claim against the evidence sentences it gathered. This second
stage fine-tunes the packaged model on that shape: the claims of the fresh pairs' *looked* halves
and of ``verifier_lab/data/written.jsonl`` (verifier_lab/NOTES.md, "The cross-encoder"), each with
the premise the verifier builds for it, labelled with its pair's verdict. Nothing of the fresh
pairs' untouched halves or of the development set's test half is read.

Training starts from the NLI-trained model as it was packaged before any adaptation (commit
``NLI_STAGE``, read back from git by the ``start`` step), never from the packaged model, which is
already adapted on these claims: folds that started from it would have seen the claims they
predict. Its float weights were not kept, so it starts from the int8 graph, dequantised
(:func:`dequantize`). The combiner is fitted on these claims too (beside the
development set's fitting half), so on each of them it must read a model that did not train on
it: the claims are split into ``FOLDS`` folds by author, a model adapted on the other folds
predicts each fold through ``NLIModel`` exactly as the verifier runs it, and those out-of-fold
probabilities go to ``crossencoder/out_of_fold.json`` for ``fit_combiner``; the model shipped is
adapted on every fold. The graph is quantised per channel: per tensor, as the NLI stage once
exported it, the adapted model lost most of what it learnt (docs/verifier.md).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from verifier_lab.evaluate import KEPT_APART, ROOT

PAIRS = ROOT / ".train" / "adapt_ce.jsonl"
REPLAY = ROOT / ".train" / "replay.jsonl"
PACKAGED = ROOT / "judges" / "verifier" / "crossencoder"
START = ROOT / ".train" / "nli_stage"
#: the last commit whose packaged cross-encoder is the NLI-trained one, not yet adapted
NLI_STAGE = "1418096"
FOLDS = 3


def adaptation_rows() -> list[dict]:
    """The rows the cross-encoder is adapted on: the fresh pairs' looked halves and the written set."""
    from verifier_lab.evaluate import FRESH, FRESH2, FRESH3, WRITTEN, load

    rows = [r for path in (FRESH, FRESH2, FRESH3) for r in load(None, path) if r["half"] == "looked"]
    return rows + load(None, WRITTEN)


def author(row: dict) -> str:
    """The author a row's text comes from (its origin): a fold holds whole authors."""
    return row["origin"]


def build_pairs(rows: list[dict] | None = None) -> list[dict]:
    from verifier_lab.crossfit import cross_encoder_pairs, fold_of

    rows = adaptation_rows() if rows is None else rows
    by_group = {r["group"]: author(r) for r in rows}
    pairs = cross_encoder_pairs(rows)
    for p in pairs:
        p["author"] = by_group[p["group"]]
        p["fold"] = fold_of(p["author"], FOLDS, salt="adapt")
    return pairs


def replay_pairs(mirror: Path) -> list[dict]:
    """The NLI pairs replayed while adapting: counterfactually augmented SNLI, TaxiNLI's MultiNLI
    pairs and MED (their licences: crossencoder/README.md), read from the repositories' snapshots."""
    from verifier_lab.build_nli_data import cad_snli, med, taxinli

    return cad_snli(mirror) + taxinli(mirror) + med(mirror)


def dequantize(model_path: Path) -> dict[str, Any]:
    """A BertForSequenceClassification state dict from a dynamically quantised ONNX graph: each
    int8 MatMul weight (and uint8 embedding table) times its scale, less its zero point; the
    weight's name is read from the bias its output is added to."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(model_path)).graph
    init = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    consumers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    # the axis a per-channel scale runs along: a DequantizeLinear node says it (the embedding
    # tables); a MatMulInteger weight (in, out) has one scale per output column
    axes = {
        n.input[1]: next((a.i for a in n.attribute if a.name == "axis"), 1)
        for n in graph.node
        if n.op_type == "DequantizeLinear"
    }

    def value(name: str) -> np.ndarray:
        q = init[f"{name}_quantized"].astype(np.float32)
        scale = init[f"{name}_scale"].astype(np.float32)
        zero = init.get(f"{name}_zero_point", np.zeros_like(scale)).astype(np.float32)
        if scale.ndim == 1:  # per channel
            shape = [1] * q.ndim
            shape[axes.get(f"{name}_scale", 1)] = -1
            scale, zero = scale.reshape(shape), zero.reshape(shape)
        return (q - zero) * scale

    state = {k: v for k, v in init.items() if v.dtype == np.float32 and v.ndim >= 1 and not k.endswith("_scale")}
    for node in graph.node:
        if node.op_type == "Gather" and node.input[0].endswith("_quantized"):
            state[node.input[0].removesuffix("_quantized")] = value(node.input[0].removesuffix("_quantized"))
    for node in graph.node:
        if node.op_type != "MatMulInteger":
            continue
        weight = node.input[1].removesuffix("_quantized")
        frontier, bias = list(node.output), None
        while frontier and bias is None:
            for c in consumers.get(frontier.pop(0), []):
                bias = next((x for x in c.input if c.op_type == "Add" and x in init and x.endswith("bias")), None)
                if bias:
                    break
                frontier += list(c.output)
        if bias is None:
            raise ValueError(f"{model_path}: no bias follows {weight}")
        state[bias.removesuffix("bias") + "weight"] = value(weight).T
    return {k: np.ascontiguousarray(v) for k, v in state.items()}


def _trainer(args: argparse.Namespace):
    import torch

    from verifier_lab.train_cross_encoder import Trainer

    state = {k: torch.from_numpy(v) for k, v in dequantize(args.start / "model.onnx").items()}
    return Trainer(args, state)


def train(args: argparse.Namespace) -> None:
    import torch

    from verifier_lab.train_cross_encoder import _probabilities, load_pairs

    pairs = load_pairs(args.pairs)
    nli = load_pairs(args.replay_data) if args.replay else []
    rng = random.Random(args.seed)
    start = Path(tempfile.mkdtemp(prefix="adapt-start-"))
    shutil.copytree(args.start, start, dirs_exist_ok=True)  # --out may be the folder it starts from
    args.start = start
    t0 = time.time()

    def adapted(train_on: list[dict], seed: int):
        torch.manual_seed(seed)
        args.seed = seed
        trainer = _trainer(args)
        # NLI pairs replayed beside them, against forgetting: adapted on these claims alone, the
        # model called "Revenue grew in 2023" against "revenue of 5 million dollars in 2023, up
        # from 4 million" a contradiction at 0.98; with the replay still at 0.93 (docs/verifier.md)
        replay = rng.sample(nli, min(len(nli), int(args.replay * len(train_on))))
        trainer.fit(train_on + replay, args.epochs, args.batch, args.lr)
        return trainer

    scratch = Path(tempfile.mkdtemp(prefix="adapt-"))
    oof: dict[str, list[float]] = {}
    for k in range(FOLDS):
        held = [p for p in pairs if p["fold"] == k]
        trainer = adapted([p for p in pairs if p["fold"] != k], args.seed)
        trainer.export(scratch / f"fold{k}", held)
        oof.update(_probabilities(scratch / f"fold{k}", held))
        print(f"fold {k}: {len(held)} pairs predicted, {time.time() - t0:.0f}s", flush=True)
    trainer = adapted(pairs, args.seed)
    trainer.export(args.out, pairs)
    meta = {
        "pairs": len(pairs),
        "folds": FOLDS,
        "labels": dict(Counter(p["label"] for p in pairs)),
        "what": "out-of-fold outputs of the adapted cross-encoder on the claims it was adapted on",
    }
    # the packaged model's go to the lab (crossfit.OUT_OF_FOLD), not into the server's folder
    from verifier_lab.crossfit import OUT_OF_FOLD

    oof_path = OUT_OF_FOLD if args.out.resolve() == PACKAGED.resolve() else args.out / "out_of_fold.json"
    oof_path.write_text(
        json.dumps({"meta": meta, "probabilities": oof}, indent=0, sort_keys=True) + "\n", encoding="utf-8"
    )
    record_path = args.out / "training.json"
    record = json.loads((start / "training.json").read_text(encoding="utf-8"))
    record["adapted"] = {
        "data": "fresh*.jsonl looked halves and written.jsonl (adapt_cross_encoder pairs)",
        "pairs": len(pairs),
        "labels": meta["labels"],
        "authors": len({p["author"] for p in pairs}),
        "started_from": f"the NLI-stage int8 model of {NLI_STAGE}, dequantised",
        "epochs": args.epochs,
        "batch": args.batch,
        "lr": args.lr,
        "seed": args.seed,
        "replay": {"data": str(args.replay_data), "per_pair": args.replay, "pairs_in_data": len(nli)},
        "quantisation": "dynamic int8, per channel",
        "train_seconds": round(time.time() - t0, 1),
        "trained_on": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        "script": "python -m verifier_lab.adapt_cross_encoder train",
    }
    record_path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.rmtree(start, ignore_errors=True)
    print(json.dumps(record["adapted"]), flush=True)


def extract_start(out: Path, commit: str = NLI_STAGE) -> list[str]:
    """The packaged cross-encoder's files as they were at ``commit``, read from git."""
    import subprocess

    folder = PACKAGED.relative_to(ROOT).as_posix()
    names = subprocess.run(
        ["git", "ls-tree", "--name-only", commit, f"{folder}/"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split()
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        blob = subprocess.run(["git", "show", f"{commit}:{name}"], cwd=ROOT, check=True, capture_output=True).stdout
        (out / Path(name).name).write_bytes(blob)
    return names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="step", required=True)
    pairs_step = sub.add_parser("pairs", help="the claims as the verifier presents them -> --pairs")
    replay_step = sub.add_parser("replay", help="NLI pairs to replay -> --replay-data")
    replay_step.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    start_step = sub.add_parser("start", help=f"the NLI-stage model of {NLI_STAGE} -> --start")
    t = sub.add_parser("train", help="adapt, cross-fitted, and export")
    for p in (pairs_step, t):
        p.add_argument("--pairs", type=Path, default=PAIRS)
    pairs_step.add_argument(
        "--kept-apart",
        choices=sorted(KEPT_APART),
        help="a kept-apart round's claims instead (evaluate.KEPT_APART; sweep_adaptation.py)",
    )
    for p in (replay_step, t):
        p.add_argument("--replay-data", type=Path, default=REPLAY, help="NLI pairs (the replay step)")
    for p in (start_step, t):
        p.add_argument("--start", type=Path, default=START, help="the NLI-stage int8 model (the start step)")
    t.add_argument("--out", type=Path, default=PACKAGED)
    t.add_argument("--base", type=Path, default=None, help="config and tokenizer (train_cross_encoder --base)")
    t.add_argument("--replay", type=float, default=1.0, help="NLI pairs mixed in, per adaptation pair")
    t.add_argument("--epochs", type=float, default=3.0)
    t.add_argument("--batch", type=int, default=16)
    t.add_argument("--lr", type=float, default=3e-5)
    t.add_argument("--seed", type=int, default=1)
    t.add_argument("--max-length", type=int, default=256)
    t.add_argument("--layers", type=int, default=6)
    args = ap.parse_args()
    if args.step == "pairs":
        from verifier_lab.evaluate import load

        pairs = build_pairs(load(None, KEPT_APART[args.kept_apart]) if args.kept_apart else None)
        args.pairs.parent.mkdir(parents=True, exist_ok=True)
        args.pairs.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs), encoding="utf-8")
        folds = Counter(p["fold"] for p in pairs)
        print(f"{len(pairs)} pairs -> {args.pairs}: {dict(Counter(p['label'] for p in pairs))}; folds {dict(folds)}")
    elif args.step == "replay":
        nli = replay_pairs(args.mirror)
        args.replay_data.parent.mkdir(parents=True, exist_ok=True)
        args.replay_data.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in nli), encoding="utf-8")
        print(f"{len(nli)} NLI pairs -> {args.replay_data}: {dict(Counter(p['label'] for p in nli))}")
    elif args.step == "start":
        names = extract_start(args.start)
        print(f"{len(names)} files of {NLI_STAGE} -> {args.start}")
    else:
        train(args)


if __name__ == "__main__":
    main()
