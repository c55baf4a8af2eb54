"""Fine-tuning the cross-encoder on the fitting half without fitting the combiner on its own echo.

    python -m verifier_lab.crossfit --out .train/devset_ce.jsonl     # what it reads
    python verifier_lab/train_cross_encoder.py --devset .train/devset_ce.jsonl ...
    python -m verifier_lab.fit_combiner                             # reads the outputs

The issue's next step once features and a combiner stop short: fine-tune the cross-encoder on the
fitting half, on exactly what the verifier gives it at run time (each claim with its evidence
premise, labelled with its pair's verdict). The combiner is fitted on the same half with the
cross-encoder's probabilities as features, so on each claim it must see a model that did not
train on that claim: the half's groups are split into ``FOLDS`` folds by hash; a model fine-tuned
on the other folds predicts each fold, and those out-of-fold probabilities are shipped beside the
model (``crossencoder/out_of_fold.json``, keyed by premise and claim). ``fit_combiner`` reads them
instead of running the model (:class:`OutOfFold`); the shipped model is fine-tuned on every fold.
The test half is read by none of this.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections import Counter
from pathlib import Path

from judges.verifier.nli import NLIScores
from judges.verifier.verifier import VerifierConfig, _gather, _normalise_sources
from verifier_lab.evaluate import load
from verifier_lab.fit_combiner import training_claims

FOLDS = 5
#: the shipped model's out-of-fold outputs: a training record, so it lives here and not beside the model
OUT_OF_FOLD = Path(__file__).resolve().parent / "crossencoder" / "out_of_fold.json"
NLI_LABEL = {"supported": "entailment", "contradicted": "contradiction", "unverifiable": "neutral"}


def pair_key(premise: str, hypothesis: str) -> str:
    return hashlib.sha256(f"{premise}\x00{hypothesis}".encode()).hexdigest()[:20]


def fold_of(group: str, folds: int = FOLDS, salt: str = "crossfit") -> int:
    """A fold fixed by a hash of the group, so that a refit splits the same way."""
    return int(hashlib.sha256(f"{salt}:{group}".encode()).hexdigest(), 16) % folds


class _Recorder:
    """Stands in for the cross-encoder and keeps what it was asked."""

    def __init__(self) -> None:
        self.pairs: list[tuple[str, str]] = []

    def predict(self, pairs: list[tuple[str, str]]) -> list[NLIScores]:
        self.pairs.extend(pairs)
        return [NLIScores(1 / 3, 1 / 3, 1 / 3) for _ in pairs]


class OutOfFold:
    """The cross-encoder's out-of-fold probabilities on the claims it was trained on, looked up by
    pair; with a ``fallback`` model, the claims it never saw are run through that model."""

    def __init__(self, path: Path = OUT_OF_FOLD, fallback=None) -> None:
        self.path = path
        self.fallback = fallback
        self.table: dict[str, list[float]] = json.loads(path.read_text(encoding="utf-8"))["probabilities"]

    def predict(self, pairs: list[tuple[str, str]]) -> list[NLIScores]:
        out = []
        for premise, hypothesis in pairs:
            row = self.table.get(pair_key(premise, hypothesis))
            if row is None and self.fallback is not None:
                out.extend(self.fallback.predict([(premise, hypothesis)]))
                continue
            if row is None:
                raise KeyError(
                    f"{self.path} has no output for this claim ({hypothesis[:60]!r}): the evidence it was "
                    "made on has changed; rebuild the pairs and retrain (module docstring)"
                )
            out.append(NLIScores(entailment=row[0], neutral=row[1], contradiction=row[2]))
        return out


def cross_encoder_pairs(rows: list[dict]) -> list[dict]:
    """(premise, claim, label, fold) for every training claim of ``rows``, as the verifier builds it."""
    config = VerifierConfig()
    out: dict[str, dict] = {}
    for r, claims in training_claims(rows):
        recorder = _Recorder()
        sources = _normalise_sources(r["sources"], config.max_sources_per_claim)
        _gather(claims, sources, config, cross_encoder=recorder)
        for premise, hypothesis in recorder.pairs:
            key = pair_key(premise, hypothesis)
            out.setdefault(
                key,
                {
                    "key": key,
                    "premise": premise,
                    "hypothesis": hypothesis,
                    "label": NLI_LABEL[r["label"]],
                    "group": r["group"],
                    "fold": fold_of(r["group"]),
                },
            )
    return list(out.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(".train/devset_ce.jsonl"))
    args = ap.parse_args()
    pairs = cross_encoder_pairs(load("fit"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs), encoding="utf-8")
    folds = Counter(p["fold"] for p in pairs)
    labels = Counter(p["label"] for p in pairs)
    print(f"{len(pairs)} fit-half pairs -> {args.out}: {dict(labels)}; by fold {dict(sorted(folds.items()))}")


if __name__ == "__main__":
    main()
