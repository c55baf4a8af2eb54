"""The NLI path on a tiny ONNX cross-encoder the test builds itself (pure, no download).

The model has the inputs and output of an optimum export (``input_ids`` / ``attention_mask``
[/ ``token_type_ids``] int64 [batch, seq] -> ``logits`` float [batch, 3]); its graph is
``sum_over_tokens(Embedding[input_ids] * attention_mask)`` with fixed weights: the token
"agree" pushes the entailment logit, "refute" the contradiction logit, every other token the
neutral logit by 1. Which logit column means what is given only by config.json's id2label.
"""

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

from judges.verifier import NLIModelError, VerifierConfig, check_grounding
from judges.verifier.nli import NLIModel
from tests.verifier_support import REGRESSED_2026_11_27

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "agree",
    "refute",
    "premium",
    "users",
    "get",
    "requests",
    "per",
    "minute",
    "the",
    "limit",
    "is",
    ".",
]
# label order of the cross-encoder/nli-* models
CROSS_ENCODER_LABELS = {"0": "contradiction", "1": "entailment", "2": "neutral"}


def _embedding(labels: dict[str, str]) -> np.ndarray:
    col = {name.lower(): int(i) for i, name in labels.items()}
    table = np.zeros((len(VOCAB), 3), dtype=np.float32)
    for i, token in enumerate(VOCAB):
        if token in ("[PAD]", "[CLS]", "[SEP]"):
            continue
        if token == "agree":
            table[i, col["entailment"]] = 30.0
        elif token == "refute":
            table[i, col["contradiction"]] = 30.0
        else:
            table[i, col["neutral"]] = 1.0
    return table


def build_model_dir(path, labels=CROSS_ENCODER_LABELS, *, token_type_ids=False, weights_labels=None):
    """Write model.onnx, tokenizer.json and config.json into ``path``.

    ``weights_labels`` is the label order the weights were trained with (defaults to
    ``labels``); a different ``labels`` simulates a config.json that disagrees with it."""
    path.mkdir(parents=True, exist_ok=True)
    table = _embedding(weights_labels or labels)
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
    ]
    nodes = [
        helper.make_node("Gather", ["embedding", "input_ids"], ["gathered"]),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_f", "axis2"], ["mask_3d"]),
        helper.make_node("Mul", ["gathered", "mask_3d"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "axis1"], ["summed"], keepdims=0),
    ]
    inits = [
        helper.make_tensor("embedding", TensorProto.FLOAT, table.shape, table.flatten().tolist()),
        helper.make_tensor("axis1", TensorProto.INT64, [1], [1]),
        helper.make_tensor("axis2", TensorProto.INT64, [1], [2]),
    ]
    if token_type_ids:
        # declared and consumed (times zero), as BERT-style exports do
        inputs.append(helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["batch", "sequence"]))
        nodes += [
            helper.make_node("Cast", ["token_type_ids"], ["tt_f"], to=TensorProto.FLOAT),
            helper.make_node("ReduceSum", ["tt_f", "axis1"], ["tt_sum"], keepdims=1),
            helper.make_node("Mul", ["tt_sum", "zero"], ["tt_zero"]),
            helper.make_node("Add", ["summed", "tt_zero"], ["logits"]),
        ]
        inits.append(helper.make_tensor("zero", TensorProto.FLOAT, [1], [0.0]))
    else:
        nodes.append(helper.make_node("Identity", ["summed"], ["logits"]))
    graph = helper.make_graph(
        nodes, "tiny-nli", inputs, [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 3])], inits
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path / "model.onnx"))

    tok = Tokenizer(models.WordLevel({t: i for i, t in enumerate(VOCAB)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tok.save(str(path / "tokenizer.json"))
    (path / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["DebertaV2ForSequenceClassification"],
                "id2label": labels,
                "label2id": {v: int(k) for k, v in labels.items()},
                "pad_token_id": 0,
                "max_position_embeddings": 512,
            }
        )
    )
    return path


SOURCE = "Premium users get 1,000 requests per minute."


@pytest.fixture
def model_dir(tmp_path):
    return build_model_dir(tmp_path / "nli")


def verdicts(text, model_dir, sources=(SOURCE,), **config):
    result = check_grounding(text, list(sources), VerifierConfig(nli_model_dir=str(model_dir), **config))
    assert result.method == "nli"
    return [c.verdict for c in result.claims], result


def test_entailment_contradiction_and_neutral(model_dir):
    got, result = verdicts("Agree agree agree. Refute refute refute. The limit is high.", model_dir)
    assert got == ["supported", "contradicted", "unverifiable"]
    supported, contradicted, neutral = result.claims
    assert supported.confidence > 0.99 and supported.reason.startswith("entailment")
    assert contradicted.confidence > 0.99 and contradicted.reason.startswith("contradiction")
    assert neutral.reason.startswith("NLI undecided")
    assert supported.best_source.id == "source-0" and supported.best_source.span == SOURCE


def test_label_order_comes_from_config(tmp_path):
    # the same weights, read with a permuted id2label: entailment and contradiction swap
    permuted = {"0": "entailment", "1": "contradiction", "2": "neutral"}
    wrong = build_model_dir(tmp_path / "permuted", permuted, weights_labels=CROSS_ENCODER_LABELS)
    got, _ = verdicts("Agree agree agree. Refute refute refute.", wrong)
    assert got == ["contradicted", "supported"]
    # weights and config agreeing on another order work as well
    other = build_model_dir(tmp_path / "other", {"0": "NEUTRAL", "1": "CONTRADICTION", "2": "ENTAILMENT"})
    got, _ = verdicts("Agree agree agree. Refute refute refute.", other)
    assert got == ["supported", "contradicted"]


def test_token_type_ids_are_fed_when_declared(tmp_path):
    model = NLIModel(build_model_dir(tmp_path / "tt", token_type_ids=True))
    assert set(model.inputs) == {"input_ids", "attention_mask", "token_type_ids"}
    got, _ = verdicts("Agree agree agree. Refute refute refute.", tmp_path / "tt")
    assert got == ["supported", "contradicted"]


def test_pairs_are_batched_and_padding_does_not_change_scores(model_dir):
    model = NLIModel(model_dir, batch_size=4)
    pairs = [
        (SOURCE, "agree"),
        (SOURCE + " " + "the limit is " * 5, "refute"),
        ("x", "the limit"),
        (SOURCE, "agree refute"),
        (SOURCE, "premium users"),
        ("y y y y y y y y", "agree"),
    ]
    batched = model.probabilities(pairs)
    assert model.runs == 2  # 6 pairs, batch size 4
    single = np.vstack([NLIModel(model_dir).probabilities([p]) for p in pairs])
    np.testing.assert_allclose(batched, single, atol=1e-6)
    np.testing.assert_allclose(batched.sum(axis=1), 1.0, atol=1e-6)


def test_one_check_is_one_run_for_all_claim_source_pairs(model_dir):
    from judges.verifier.nli import get_nli_model

    model = get_nli_model(model_dir)
    before = model.runs
    got, _ = verdicts(
        "Agree agree agree. Refute refute refute. The limit is high.",
        model_dir,
        sources=(SOURCE, "The limit is 5.", "Users get requests."),
    )
    assert len(got) == 3
    assert model.runs - before == 1  # 3 claims x 3 sources = 9 pairs, one batch


def test_best_source_is_the_most_entailing_one(model_dir):
    _, result = verdicts(
        "Premium users get agree.",
        model_dir,
        sources=[
            {"id": "a", "text": "The limit is high, the limit is high, the limit is high."},
            {"id": "b", "text": "Premium."},
        ],
    )
    claim = result.claims[0]
    assert claim.verdict == "supported" and claim.best_source.id == "b"


def test_fact_backstop_only_when_the_model_is_undecided(model_dir):
    claim = "Premium users get 500 requests per minute."
    got, result = verdicts(claim, model_dir)
    assert got == ["contradicted"]
    assert result.claims[0].reason.startswith("fact check: number mismatch")
    got, _ = verdicts(claim, model_dir, fact_backstop=False)
    assert got == ["unverifiable"]
    # a confident model verdict is never overturned by the fact check
    got, _ = verdicts("Premium users get 500 requests per minute agree agree.", model_dir)
    assert got == ["supported"]


def test_thresholds_apply_to_the_probabilities(model_dir):
    # "agree the limit": entailment logit 30 vs neutral 1 per token -> entailment ~1.0
    got, _ = verdicts("Agree the limit is high.", model_dir, entailment_threshold=0.7)
    assert got == ["supported"]
    got, _ = verdicts("Agree the limit is high.", model_dir, entailment_threshold=1.01, fact_backstop=False)
    assert got == ["unverifiable"]


def test_missing_files_and_bad_labels_are_clear_errors(tmp_path):
    with pytest.raises(NLIModelError, match="missing model.onnx, tokenizer.json, config.json"):
        NLIModel(tmp_path)
    bad = build_model_dir(
        tmp_path / "bad", {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}, weights_labels=CROSS_ENCODER_LABELS
    )
    with pytest.raises(NLIModelError, match="id2label"):
        NLIModel(bad)


def test_no_sources_never_loads_the_model(tmp_path):
    result = check_grounding("Anything.", [], VerifierConfig(nli_model_dir=str(tmp_path / "absent")))
    assert result.reason_code == "GROUNDING_NO_SOURCES" and result.claims == []


# --------------------------------------------------------------------------- the packaged cross-encoder


@REGRESSED_2026_11_27
def test_packaged_cross_encoder_orders_entailment_contradiction_and_neutral():
    """The model shipped in judges/verifier/crossencoder/ is a small NLI model (its data card says
    where it fails); what the combiner relies on is that it ranks the three readings the right
    way round on the same premise. (It calls a statement about something the premise never
    mentions a contradiction more often than neutral, as SNLI-trained models do -- 0.73 for the
    head count below; the data card lists it -- so only its ranking of neutral is pinned.)"""
    from judges.verifier.verifier import CROSS_ENCODER_DIR

    model = NLIModel(CROSS_ENCODER_DIR)
    premise = "The company reported revenue of 5 million dollars in 2023, up from 4 million."
    grew, fell, unrelated = model.predict(
        [
            (premise, "Revenue grew in 2023."),
            (premise, "Revenue fell in 2023."),
            (premise, "The company has 300 employees."),
        ]
    )
    assert grew.entailment > fell.entailment and grew.entailment > grew.contradiction
    assert fell.contradiction > grew.contradiction and fell.contradiction > fell.entailment
    assert unrelated.neutral > max(unrelated.entailment, grew.neutral, fell.neutral)
    assert unrelated.entailment < grew.entailment


@REGRESSED_2026_11_27
def test_default_path_feeds_the_cross_encoder_into_the_combiner():
    from judges.verifier.combiner import get_combiner

    source = "The company reported revenue of 5 million dollars in 2023, up from 4 million."
    grew = check_grounding("Revenue grew in 2023.", [source]).claims[0]
    unrelated = check_grounding("The company has 300 employees.", [source]).claims[0]
    assert {"nli_entailment", "nli_contradiction", "nli_neutral"} <= set(get_combiner().features)
    assert grew.features is not None and unrelated.features is not None
    # read on each claim's evidence, not a constant
    assert grew.features["nli_entailment"] > unrelated.features["nli_entailment"]
    assert unrelated.features["nli_neutral"] > grew.features["nli_neutral"]
