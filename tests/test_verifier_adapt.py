"""Adapting the cross-encoder (verifier_lab/adapt_cross_encoder.py): the weights it
starts from are the packaged int8 graph's, read back exactly; what it trains on never includes a
pair the accuracy floors measure; the combiner reads the claims the model trained on through
out-of-fold outputs and the others through the model. Pure: no database, no Django."""

import json

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from judges.verifier.nli import NLIModel, NLIScores
from judges.verifier.verifier import CROSS_ENCODER_DIR
from verifier_lab.adapt_cross_encoder import FOLDS, adaptation_rows, author, dequantize
from verifier_lab.crossfit import OutOfFold, fold_of, pair_key
from verifier_lab.evaluate import (
    FRESH_SETS,
    KEPT_APART,
    LABELS,
    WRITTEN,
    WRITTEN_CONTRAST,
    WRITTEN_ROUND4,
    load,
)

MODEL = CROSS_ENCODER_DIR / "model.onnx"


def _bert_logits(w: dict, ids: list[int], types: list[int]) -> np.ndarray:
    """BertForSequenceClassification's forward pass in numpy (6 layers, 12 heads, GELU)."""
    from math import erf, sqrt

    def norm(x, name):
        mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * w[f"{name}.weight"] + w[f"{name}.bias"]

    def dense(x, name):
        return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    gelu = np.vectorize(lambda v: 0.5 * v * (1 + erf(v / sqrt(2))))
    e = "bert.embeddings"
    x = w[f"{e}.word_embeddings.weight"][ids] + w[f"{e}.position_embeddings.weight"][: len(ids)]
    x = norm(x + w[f"{e}.token_type_embeddings.weight"][types], f"{e}.LayerNorm")
    for k in range(6):
        layer = f"bert.encoder.layer.{k}"
        q, kk, v = (
            dense(x, f"{layer}.attention.self.{n}").reshape(len(ids), 12, 32) for n in ("query", "key", "value")
        )
        scores = np.einsum("ihd,jhd->hij", q, kk) / np.sqrt(32)
        att = np.exp(scores - scores.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = np.einsum("hij,jhd->ihd", att, v).reshape(len(ids), 384)
        x = norm(x + dense(ctx, f"{layer}.attention.output.dense"), f"{layer}.attention.output.LayerNorm")
        x = norm(
            x + dense(gelu(dense(x, f"{layer}.intermediate.dense")), f"{layer}.output.dense"),
            f"{layer}.output.LayerNorm",
        )
    pooled = np.tanh(dense(x[0], "bert.pooler.dense"))
    return dense(pooled, "classifier")


def test_the_weights_read_back_from_the_int8_graph_give_the_packaged_models_verdicts():
    weights = {k: v.astype(np.float64) for k, v in dequantize(MODEL).items()}
    assert len(weights) == 105  # every weight of the 6-layer classifier, nothing left unnamed
    assert weights["bert.encoder.layer.3.intermediate.dense.weight"].shape == (1536, 384)
    model = NLIModel(CROSS_ENCODER_DIR, batch_size=1)
    premise = "The company reported revenue of 5 million dollars in 2023, up from 4 million."
    for claim in ("Revenue grew in 2023.", "Revenue fell in 2023.", "The company has 300 employees."):
        enc = model.tokenizer.encode(premise, claim)
        logits = _bert_logits(weights, enc.ids, enc.type_ids)
        p = np.exp(logits - logits.max())
        p /= p.sum()
        (scores,) = model.predict([(premise, claim)])
        # the graph also quantises activations as it runs: close, not equal (0.13 apart at most
        # on these claims for the model of the second adaptation, whose third claim sits between
        # contradiction and neutral; a weight misnamed or mis-scaled moves them far more)
        assert np.allclose(p, [scores.contradiction, scores.entailment, scores.neutral], atol=0.15), claim
        assert int(p.argmax()) == int(np.argmax([scores.contradiction, scores.entailment, scores.neutral]))


def test_the_packaged_graph_is_quantised_per_channel():
    """One scale per output column: per tensor, an adapted model lost most of what it learnt."""
    graph = onnx.load(str(MODEL)).graph
    scales = {i.name: numpy_helper.to_array(i) for i in graph.initializer if i.name.endswith("_scale")}
    weights = [n.input[1].removesuffix("_quantized") for n in graph.node if n.op_type == "MatMulInteger"]
    assert len(weights) == 6 * 6 + 2
    assert all(scales[f"{w}_scale"].ndim == 1 and scales[f"{w}_scale"].size > 1 for w in weights)


def test_nothing_the_floors_measure_is_trained_on():
    rows = adaptation_rows()
    ids = {r["id"] for r in rows}
    untouched = [r for path in FRESH_SETS for r in load(None, path) if r["half"] == "untouched"]
    devset = load(None)
    assert ids and not ids & {r["id"] for r in untouched + devset}
    # nor the same claim under another id
    assert not {r["claim"] for r in rows} & {r["claim"] for r in untouched + devset}
    assert {r["id"] for r in load(None, WRITTEN)} <= ids
    # the training pairs kept apart share nothing with what the floors measure either, nor with the
    # pairs adapted on, so that adding them later stays a clean step
    pending = {path: load(None, path) for path in KEPT_APART.values()}
    assert len(pending[WRITTEN_ROUND4]) == 1600 and len(pending[WRITTEN_CONTRAST]) == 1260
    measured = untouched + devset
    for kept in pending.values():
        assert all(r["label"] in LABELS for r in kept)
        assert not {r["claim"] for r in kept} & {r["claim"] for r in rows + measured}
        assert not {r["id"] for r in kept} & (ids | {r["id"] for r in measured})
    assert not {r["claim"] for r in pending[WRITTEN_ROUND4]} & {r["claim"] for r in pending[WRITTEN_CONTRAST]}
    # whole authors go to a fold, and every fold has some
    authors = {author(r) for r in rows}
    assert len(authors) >= 10 and {fold_of(a, FOLDS, salt="adapt") for a in authors} == set(range(FOLDS))


def test_the_combiner_reads_trained_on_claims_out_of_fold_and_the_others_through_the_model(tmp_path):
    seen = []

    class Model:
        def predict(self, pairs):
            seen.extend(pairs)
            return [NLIScores(0.2, 0.3, 0.5) for _ in pairs]

    path = tmp_path / "out_of_fold.json"
    path.write_text(json.dumps({"meta": {}, "probabilities": {pair_key("p", "trained on"): [0.9, 0.05, 0.05]}}))
    trained, other = OutOfFold(path, fallback=Model()).predict([("p", "trained on"), ("p", "never seen")])
    assert (trained.entailment, other.entailment) == (0.9, 0.2)
    assert seen == [("p", "never seen")]
    with pytest.raises(KeyError, match="rebuild the pairs"):
        OutOfFold(path).predict([("p", "never seen")])


def test_a_contradiction_no_single_fact_shows_names_the_closest_sentence():
    """A comparison reversed in other words: no fact conflict, the combiner sure of a contradiction
    (a pair of the written training set: this pins the verdict's shape, not the model's accuracy)."""
    from judges.verifier import check_grounding

    sources = [
        "Adult cats typically need fewer calories per kilogram than kittens, which require about two to three "
        "times as much energy to support growth. Feed kitten food until around 12 months of age."
    ]
    (claim,) = check_grounding(
        "Kittens need fewer calories per kilogram of body weight than adult cats do.", sources
    ).claims
    assert claim.verdict == "contradicted" and claim.kind == "meaning"
    assert claim.reason == claim.failed
    assert claim.reason.endswith(": the evidence says otherwise, though no single fact differs")
    assert claim.reason.startswith(f"contradiction {claim.probabilities['contradicted']:.2f}")
    assert claim.best_source.span.startswith("Adult cats typically need fewer calories")
    assert claim.thresholds_input["on_meaning"] is True and claim.thresholds_input["conflict"] is None


def test_the_start_step_reads_back_the_nli_stage_model_not_the_adapted_one(tmp_path):
    import subprocess

    from verifier_lab.adapt_cross_encoder import NLI_STAGE, ROOT, extract_start

    if subprocess.run(["git", "cat-file", "-e", f"{NLI_STAGE}^{{commit}}"], cwd=ROOT, capture_output=True).returncode:
        pytest.skip(f"a checkout without commit {NLI_STAGE} (shallow)")
    names = extract_start(tmp_path)
    assert {n.rsplit("/", 1)[-1] for n in names} >= {"model.onnx", "tokenizer.json", "config.json", "training.json"}
    record = json.loads((tmp_path / "training.json").read_text(encoding="utf-8"))
    assert "adapted" not in record and "adapted" in json.loads((CROSS_ENCODER_DIR / "training.json").read_text())
    assert (tmp_path / "model.onnx").read_bytes() != MODEL.read_bytes()
    assert (tmp_path / "tokenizer.json").read_bytes() == (CROSS_ENCODER_DIR / "tokenizer.json").read_bytes()


def test_a_contrast_triple_is_one_source_set_and_a_claim_of_each_verdict():
    """The fifth round (evaluate.WRITTEN_CONTRAST): each group is the same sources with a supported
    claim, the claim with one detail the sources refute, and the claim with one they do not give."""
    groups: dict[str, list[dict]] = {}
    for r in load(None, WRITTEN_CONTRAST):
        groups.setdefault(r["group"], []).append(r)
    assert len(groups) == 420
    for group, triple in groups.items():
        assert sorted(r["label"] for r in triple) == sorted(LABELS), group
        assert len({json.dumps(r["sources"]) for r in triple}) == 1, group
        assert {r["id"].rsplit("-", 1)[1] for r in triple} == {"s", "c", "u"}, group
    assert len({author(triple[0]) for triple in groups.values()}) == 6


def test_the_sweep_names_each_kept_apart_round_and_scores_a_variant_with_the_claims_it_trained_on():
    from verifier_lab.sweep_adaptation import DATA, DERIVED, VARIANTS, data_of

    assert set(DATA) == {"base"} | set(KEPT_APART)
    assert all(set(spec["data"]) <= set(DATA) and "base" in spec["data"] for spec in VARIANTS.values())
    assert data_of("G") == ("base", "r4", "r5")
    # an average reads the held-out claims of its first trained part; anything else, the shipped claims
    assert data_of("FH") == VARIANTS["F"]["data"] and all(
        v in VARIANTS or v == "start" for m in DERIVED.values() for v in m
    )
    assert data_of("shipped") == data_of("Gb") == ("base",)
