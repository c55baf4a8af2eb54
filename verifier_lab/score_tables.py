"""The verdicts of cross-encoder variants from their output tables, without their models.

    python -m verifier_lab.score_tables record          # .train/eval_pairs.jsonl
    python -m verifier_lab.score_tables table MODEL_DIR OUT.json   # a model's table
    python -m verifier_lab.score_tables score TABLES NAME [NAME ...] [-v]

``record``: every (premise, claim) pair the verifier gives its cross-encoder on the development
set and the fresh pairs (the premise does not depend on the model's answer, so it can be recorded
once). ``table``: an int8 graph's outputs on those pairs, as the verifier runs it (one pair a run).
``score``: for each NAME (``TABLES/NAME.oof.json`` and ``NAME.final.json``, as
``sweep_adaptation.py`` writes them), the combiner refitted as ``fit_combiner`` does (the fitting
half through the final table, the adaptation claims through the out-of-fold one, with the
kept-apart rounds' claims for a variant trained on them: ``sweep_adaptation.data_of``), then
the verdicts on the evaluation sets with the cross-encoder looked up by pair. The evidence of
each call is gathered once and reused: only the cross-encoder's three features change between
variants. Nothing here runs in production.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from judges.verifier import verifier as V
from judges.verifier.combiner import Combiner
from judges.verifier.nli import NLIScores
from verifier_lab import evaluate as E
from verifier_lab import fit_combiner as F
from verifier_lab.adapt_cross_encoder import adaptation_rows
from verifier_lab.crossfit import _Recorder, pair_key
from verifier_lab.sweep_adaptation import data_of
from verifier_lab.train_cross_encoder import _probabilities, load_pairs

EVAL_PAIRS = E.ROOT / ".train" / "eval_pairs.jsonl"


class Table:
    """Stands in for the cross-encoder with outputs looked up by pair (uniform where missing, counted)."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table
        self.missing = 0

    def predict(self, pairs: list[tuple[str, str]]) -> list[NLIScores]:
        out = []
        for premise, hypothesis in pairs:
            row = self.table.get(pair_key(premise, hypothesis))
            if row is None:
                self.missing += 1
                row = [1 / 3, 1 / 3, 1 / 3]
            out.append(NLIScores(entailment=row[0], neutral=row[1], contradiction=row[2]))
        return out


_current: dict[str, Any] = {"model": None}
_memo: dict[tuple, tuple] = {}
_real_gather = V._gather
_real_cross_encode = V._cross_encode


def _gather(claims, sources, config, embedder=None, cross_encoder=None):
    """``verifier._gather`` with the evidence kept per call; the cross-encoder is asked each time."""
    key = (tuple(claims), tuple((s.id, s.text, s.relevance) for s in sources))
    if key not in _memo:
        held: dict[str, tuple] = {}

        def keep(out, sentences, previous, config, model=None):
            held["args"] = (out, sentences, previous, config)

        V._cross_encode = keep
        try:
            out, spans = _real_gather(claims, sources, config, embedder, None)
        finally:
            V._cross_encode = _real_cross_encode
        _memo[key] = (out, spans, held.get("args"))
    out, spans, args = _memo[key]
    if args:
        out_, sentences, previous, config_ = args
        _real_cross_encode(out_, sentences, previous, config_, cross_encoder or _current["model"])
    return out, spans


def evaluation_sets() -> list[tuple[str, list[dict]]]:
    untouched = [r for p in (E.FRESH, E.FRESH2, E.FRESH3) for r in E.load("untouched", p)]
    return [
        ("devset test", E.load("test")),
        ("devset fit", E.load("fit")),
        ("fresh1-3 untouched", untouched),
        ("fresh4", E.load(None, E.FRESH4)),
        ("fresh5", E.load(None, E.FRESH5)),
    ]


def record() -> int:
    recorder = _Recorder()
    V.get_nli_model = lambda *a, **k: recorder  # type: ignore[assignment]
    E.run([r for _, rows in evaluation_sets() for r in rows])
    seen = {pair_key(p, h): (p, h) for p, h in recorder.pairs}
    EVAL_PAIRS.parent.mkdir(parents=True, exist_ok=True)
    EVAL_PAIRS.write_text(
        "".join(
            json.dumps({"key": k, "premise": p, "hypothesis": h}, ensure_ascii=False) + "\n"
            for k, (p, h) in seen.items()
        ),
        encoding="utf-8",
    )
    return len(seen)


def table(model_dir: Path) -> dict[str, list[float]]:
    return _probabilities(model_dir, load_pairs(EVAL_PAIRS))


def score(folder: Path, name: str, verbose: bool = False) -> dict[str, Any]:
    oof = json.loads((folder / f"{name}.oof.json").read_text(encoding="utf-8"))
    final = json.loads((folder / f"{name}.final.json").read_text(encoding="utf-8"))
    if "probabilities" in oof:  # crossencoder/out_of_fold.json, for the shipped model
        oof = oof["probabilities"]
    kept_apart = {d for d in data_of(name) if d != "base"}  # adaptation_rows() does not hold them
    x_fit, y_fit, _ = F.claim_rows(E.load("fit"), Table(final))
    rows = adaptation_rows() + [r for d in sorted(kept_apart) for r in E.load(None, E.KEPT_APART[d])]
    x_ad, y_ad, _ = F.claim_rows(rows, Table(oof))
    result = F.fit(np.concatenate([x_fit, x_ad]), np.concatenate([y_fit, y_ad]))
    # rounded as combiner.json is, so that a variant scores as its refit would ship
    combiner = Combiner.from_dict(F.weights(result))
    V.get_combiner = lambda *a, **k: combiner
    out: dict[str, Any] = {"C": result["C"], "cv_log_loss": round(result["cv_log_loss"], 4)}
    for set_name, set_rows in evaluation_sets():
        _current["model"] = Table(final)
        results = E.run(set_rows)
        t = E.recall_table(results)
        out[set_name] = [f"{t['label'][lab]['ok']}/{t['label'][lab]['n']}" for lab in E.LABELS]
        if _current["model"].missing:
            out[set_name].append(f"{_current['model'].missing} pairs not in the table")
        if verbose:
            print(E.format_table(f"{name} {set_name}", results), flush=True)
    return out


def main() -> None:
    step, rest = sys.argv[1], sys.argv[2:]
    if step == "record":
        print(f"{record()} pairs -> {EVAL_PAIRS}")
    elif step == "table":
        Path(rest[1]).write_text(json.dumps(table(Path(rest[0]))), encoding="utf-8")
    else:
        V._gather = _gather
        V.get_nli_model = lambda *a, **k: _current["model"]
        folder, names = Path(rest[0]), [a for a in rest[1:] if a != "-v"]
        for name in names:
            print(name, json.dumps(score(folder, name, "-v" in rest)), flush=True)


if __name__ == "__main__":
    main()
