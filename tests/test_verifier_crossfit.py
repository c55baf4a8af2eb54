"""Cross-fitting the cross-encoder on the fitting half (verifier_lab/crossfit.py): the
pairs it writes are what the verifier gives the model, and the combiner's fit can read a table of
out-of-fold outputs in the model's place. Pure: no database, no Django."""

import json

import pytest

from judges.verifier.evidence import FEATURES
from verifier_lab.crossfit import (
    FOLDS,
    NLI_LABEL,
    OutOfFold,
    cross_encoder_pairs,
    fold_of,
    pair_key,
)
from verifier_lab.evaluate import load
from verifier_lab.fit_combiner import claim_rows


@pytest.fixture(scope="module")
def rows():
    return load("fit")[:16]


@pytest.fixture(scope="module")
def pairs(rows):
    return cross_encoder_pairs(rows)


def test_folds_follow_the_group_and_cover_every_fold():
    groups = [f"group-{i}" for i in range(200)]
    assert [fold_of(g) for g in groups] == [fold_of(g) for g in groups]
    assert {fold_of(g) for g in groups} == set(range(FOLDS))
    assert pair_key("a b", "c") != pair_key("a", "b c")  # the boundary between premise and claim counts


def test_pairs_are_what_the_verifier_gives_the_packaged_model(rows, pairs):
    from judges.verifier.nli import get_nli_model
    from judges.verifier.verifier import CROSS_ENCODER_DIR

    real = get_nli_model(CROSS_ENCODER_DIR, 1, batch_size=1)

    class Spy:
        seen: list[tuple[str, str]] = []

        def predict(self, batch):
            self.seen.extend(batch)
            return real.predict(batch)

    spy = Spy()
    claim_rows(rows, spy)
    assert {pair_key(p, h) for p, h in spy.seen} == {p["key"] for p in pairs}
    by_group = {r["group"]: r["label"] for r in rows}
    assert all(p["label"] == NLI_LABEL[by_group[p["group"]]] and p["fold"] == fold_of(p["group"]) for p in pairs)


def test_the_combiner_reads_out_of_fold_outputs_in_the_models_place(rows, pairs, tmp_path):
    table = {p["key"]: [0.1 + 0.01 * k, 0.2, 0.7 - 0.01 * k] for k, p in enumerate(pairs)}
    path = tmp_path / "out_of_fold.json"
    path.write_text(json.dumps({"meta": {}, "probabilities": table}))
    x, _, _ = claim_rows(rows, OutOfFold(path))
    entail = FEATURES.index("nli_entailment")
    contra = FEATURES.index("nli_contradiction")
    assert sorted(round(v, 6) for v in x[:, entail]) == sorted(round(v[0], 6) for v in table.values())
    assert sorted(round(v, 6) for v in x[:, contra]) == sorted(round(v[2], 6) for v in table.values())

    del table[pairs[0]["key"]]
    path.write_text(json.dumps({"meta": {}, "probabilities": table}))
    with pytest.raises(KeyError, match="rebuild the pairs and retrain"):
        claim_rows(rows, OutOfFold(path))
