"""The default verifier (packaged MiniLM on onnxruntime + fact alignment + learned combiner) on
labelled sets, and the public API's result shape. Pure: no database, no Django.

verifier_lab/data/devset.jsonl (1,270 pairs; origin, licence and kind on every row; data card in
verifier_lab/data/README.md) is split by group into a ``fit`` half, on which the combiner was
fitted, and a ``test`` half that nothing was tuned on (the packaged cross-encoder saw neither).
300 of its pairs were written by a second author who never saw the verifier ("independent").
``pytest tests/test_verifier_accuracy.py -s`` prints recall per label and per kind on both halves;
the floors below hold on the test half and are set just under what it measured when the combiner
was fitted (docs/verifier.md has the table).

verifier_lab/data/verifier_pairs.jsonl holds hand-written claim/source pairs in varied domains:
set A (105 pairs) was written before the verifier existed; set B (46 pairs) was written
later but before it was ever run on them. Both were run once untouched (A: 0.867 overall,
B: 0.848); generic fixes followed, so today's numbers are partly fitted to them. Run with
``-s`` to see the per-class, per-set and per-kind table.
"""

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from judges.verifier import (
    Embedder,
    VerifierConfig,
    check_grounding,
    find_contradictions,
    get_embedder,
)

DATA = Path(__file__).parents[1] / "verifier_lab" / "data" / "verifier_pairs.jsonl"
LABELS = ("supported", "contradicted", "unverifiable")

OVERALL_FLOOR = 0.85
CLASS_FLOOR = 0.80

#: Recall floors on the untouched test half of the development set (measured 0.543 / 0.611 / 0.812
#: since the cross-encoder was adapted on 2026-11-27 -- supported lost 8 of 232 pairs, WiCE
#: paraphrases mostly, while the fresh pairs' untouched halves gained 37 of 648, so the supported
#: floor went from 0.55 to 0.52 (verifier_lab/NOTES.md, "The cross-encoder, adapted"); 0.578 / 0.628 /
#: 0.780 before; 0.595 / 0.628 / 0.790;
#: 0.578 / 0.628 / 0.774 before the second stop of 2026-11-27, 0.578 / 0.598 / 0.780 before the
#: first, 0.569 / 0.577 / 0.801 before the
#: cross-encoder of 82,663 pairs and the fifth stop's fact checks; 0.586 / 0.577 / 0.801 before
#: the fact backstop was kept to an undecided combiner on 2026-11-28, 0.586 / 0.564 / 0.849 after:
#: 3 contradictions lost, 9 unverifiable pairs no longer called contradicted, so the contradicted
#: floor went from 0.57 to 0.55; verifier_lab/NOTES.md, "Undecided means undecided").
DEVSET_FLOORS = {"supported": 0.52, "contradicted": 0.55, "unverifiable": 0.76}
#: ... on its hand-written rows, the kinds of issue 10's table (measured 0.785 / 0.821 / 0.864) ...
DEVSET_OWN_FLOORS = {"supported": 0.70, "contradicted": 0.76, "unverifiable": 0.80}
#: ... and on the independent author's rows alone (measured 0.667 / 0.750 / 0.796; 0.617 / 0.750 /
#: 0.735 before the second stop of 2026-11-27, 0.633 / 0.729 / 0.755 before the first).
DEVSET_INDEPENDENT_FLOORS = {"supported": 0.58, "contradicted": 0.66, "unverifiable": 0.72}
#: Recall floors on the untouched half of the fresh independent pairs (verifier_lab/data/fresh.jsonl;
#: measured 0.774 / 0.640 / 0.727 when it was first kept, 0.839 / 0.640 / 0.818 now).
FRESH_UNTOUCHED_FLOORS = {"supported": 0.70, "contradicted": 0.56, "unverifiable": 0.68}
#: ... and of the 600 pairs four more authors wrote on 2026-11-27 (fresh2.jsonl; measured 0.664 /
#: 0.636 / 0.730 on the tree before they were read, 0.672 / 0.659 / 0.730 on the final tree of
#: the stop that read their looked half, 0.731 / 0.682 / 0.730 after the next).
FRESH2_UNTOUCHED_FLOORS = {"supported": 0.62, "contradicted": 0.60, "unverifiable": 0.68}
#: ... and of the 600 pairs four further authors wrote later that day on other domains
#: (fresh3.jsonl; measured 0.593 / 0.576 / 0.805 on the tree before they were read, 0.611 / 0.596 /
#: 0.805 on the final tree of the stop that read their looked half).
FRESH3_UNTOUCHED_FLOORS = {"supported": 0.56, "contradicted": 0.55, "unverifiable": 0.76}
#: ... and of the 600 pairs of fresh4.jsonl, an evaluation set only, all untouched (measured 0.567 /
#: 0.660 / 0.875 before the cross-encoder was adapted on the second and third written rounds,
#: 0.629 / 0.725 / 0.875 after).
FRESH4_UNTOUCHED_FLOORS = {"supported": 0.58, "contradicted": 0.67, "unverifiable": 0.82}
#: ... and of the 600 pairs of fresh5.jsonl, written from a shorter brief, all untouched (measured
#: 0.671 / 0.715 / 0.850; a model adapted on a fourth written round, not shipped: 0.654 / 0.760 / 0.875).
FRESH5_UNTOUCHED_FLOORS = {"supported": 0.62, "contradicted": 0.66, "unverifiable": 0.80}


@pytest.fixture(scope="module")
def results():
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = []
    for row in rows:
        check = check_grounding(row["claim"], row["sources"])
        assert check.total_claims == 1, row["id"]
        out.append((row, check.claims[0]))
    return out


def test_labelled_set_is_large_and_balanced(results):
    counts = Counter(row["label"] for row, _ in results)
    assert len(results) >= 60
    assert all(counts[label] >= 20 for label in LABELS)
    kinds = {row["kind"] for row, _ in results if row["label"] == "contradicted"}
    assert {"number", "date", "negation", "unit", "entity"} <= kinds
    kinds = {row["kind"] for row, _ in results if row["label"] == "unverifiable"}
    assert {"unrelated", "missing_fact", "missing_detail"} <= kinds


def test_accuracy_per_class(results, record_property):
    total, right = Counter(), Counter()
    by_set, by_kind = defaultdict(Counter), defaultdict(Counter)
    confusion = Counter()
    for row, verdict in results:
        ok = verdict.verdict == row["label"]
        total[row["label"]] += 1
        right[row["label"]] += ok
        by_set[row["set"]]["n"] += 1
        by_set[row["set"]]["ok"] += ok
        key = f"{row['label']}/{row['kind']}"
        by_kind[key]["n"] += 1
        by_kind[key]["ok"] += ok
        confusion[(row["label"], verdict.verdict)] += 1
    overall = sum(right.values()) / sum(total.values())

    print("\nverifier accuracy (embedding + facts) on", DATA.name)
    for label in LABELS:
        acc = right[label] / total[label]
        record_property(f"accuracy_{label}", round(acc, 3))
        print(f"  {label:<13} {right[label]:>3}/{total[label]:<3} {acc:.3f}")
    print(f"  {'overall':<13} {sum(right.values()):>3}/{sum(total.values()):<3} {overall:.3f}")
    for name in sorted(by_set):
        c = by_set[name]
        print(f"  set {name:<9} {c['ok']:>3}/{c['n']:<3} {c['ok'] / c['n']:.3f}")
    print("  by kind:", ", ".join(f"{k} {c['ok']}/{c['n']}" for k, c in sorted(by_kind.items())))
    print(
        "  confusion (label -> verdict):",
        ", ".join(f"{a}->{b} {n}" for (a, b), n in sorted(confusion.items()) if a != b),
    )
    for row, verdict in results:
        if verdict.verdict != row["label"]:
            print(f"  miss {row['id']}: want {row['label']}, got {verdict.verdict} ({verdict.reason})")
    record_property("accuracy_overall", round(overall, 3))

    assert overall >= OVERALL_FLOOR
    for label in LABELS:
        assert right[label] / total[label] >= CLASS_FLOOR, label


def test_verdicts_carry_a_source_span_and_a_reason(results):
    for _row, verdict in results:
        assert verdict.reason
        assert 0.0 <= verdict.confidence <= 1.0
        assert verdict.best_source is not None
        assert verdict.best_source.span in verdict.best_source.content
        assert verdict.escalated is False
        if verdict.verdict == "contradicted":
            assert verdict.kind in {
                "number",
                "unit",
                "date",
                "time",
                "entity",
                "negation",
                "antonym",
                "quantifier",
                "comparative",
                "ordinal",
                "meaning",  # no single fact differs: the combiner's reading (docs/verifier.md, step 6)
            }


# --------------------------------------------------------------------------- public API


def test_result_shape_follows_the_verifier_contract():
    result = check_grounding(
        "The API rate limit is 1000 req/min for premium users.", ["Premium users get 1,000 requests per minute."]
    ).to_dict()
    assert result["grounded"] is True
    assert result["total_claims"] == 1 and result["supported_count"] == 1
    assert result["contradicted_count"] == 0 and result["unverifiable_count"] == 0
    assert result["unverifiable_ratio"] == 0.0
    assert result["summary"] == "1/1 claims supported"
    assert result["reason_code"] is None
    claim = result["claims"][0]
    assert set(claim) >= {"claim", "verdict", "confidence", "best_source", "reason", "escalated"}
    assert claim["verdict"] == "supported" and claim["escalated"] is False
    assert set(claim["best_source"]) >= {"id", "content", "score", "span"}
    assert claim["best_source"]["id"] == "source-0"
    json.dumps(result)


def test_contradiction_names_the_mismatch_and_the_source():
    result = check_grounding(
        "Premium users get 500 requests per minute.",
        [
            {
                "id": "pricing",
                "text": "Premium users get 1,000 requests per minute. Free users get 100 requests per minute.",
            }
        ],
    )
    claim = result.claims[0]
    assert claim.verdict == "contradicted"
    assert claim.best_source.id == "pricing"
    assert claim.best_source.span == "Premium users get 1,000 requests per minute."
    assert claim.reason == "number mismatch: claim says 500 requests a minute, source says 1000 requests a minute"
    assert result.grounded is False and result.reason_code == "GROUNDING_CONTRADICTION"
    assert result.summary == "0/1 claims supported, 1 contradicted"


def test_no_sources_is_a_no_op():
    for sources in ([], None, ["", "   "], [{"id": "x", "text": ""}]):
        result = check_grounding("The limit is 1000 requests per minute.", sources).to_dict()
        assert result["grounded"] is True and result["claims"] == []
        assert result["reason_code"] == "GROUNDING_NO_SOURCES"
        assert result["summary"] == "No sources to verify against"


def test_text_without_claims_has_no_claims():
    for text in ("", "Great question! Is the limit 1000?", "```\nx = 1\n```"):
        result = check_grounding(text, ["Premium users get 1,000 requests per minute."])
        assert result.grounded is True and result.total_claims == 0
        assert result.summary == "No factual claims to verify"


def test_sources_are_sorted_by_score_and_capped():
    sources = [{"id": f"s{i}", "text": f"Fact number {i} is here.", "score": i / 10} for i in range(8)]
    sources.append({"id": "best", "text": "Premium users get 1,000 requests per minute.", "score": 0.95})
    config = VerifierConfig(max_sources_per_claim=2)
    claim = check_grounding("Premium users get 1000 requests per minute.", sources, config).claims[0]
    assert claim.verdict == "supported" and claim.best_source.id == "best"
    assert claim.best_source.relevance == 0.95
    low_only = check_grounding(
        "Premium users get 1000 requests per minute.",
        sources[:8] + [{"id": "late", "text": sources[8]["text"], "score": 0.01}],
        config,
    )
    assert low_only.claims[0].verdict != "supported"  # the right source fell outside the top 2


def test_mixed_answer_counts_and_ratio():
    text = (
        "The Eiffel Tower was completed in 1889. It is 330 metres tall. "
        "It receives about 7 million visitors a year. Is it worth a visit?"
    )
    source = "Construction of the Eiffel Tower began in 1887. The tower was completed in 1889. It is 330 metres tall."
    result = check_grounding(text, [source])
    assert [c.verdict for c in result.claims] == ["supported", "supported", "unverifiable"]
    assert result.unverifiable_ratio == pytest.approx(1 / 3, abs=1e-3)
    assert result.grounded is True  # 1/3 unverifiable is within the default 0.5
    strict = check_grounding(text, [source], VerifierConfig(max_unverifiable_ratio=0.2))
    assert strict.grounded is False and strict.reason_code == "GROUNDING_UNVERIFIABLE"


def test_thresholds_move_the_verdicts():
    text, sources = (
        "Full-time staff get 25 days of paid leave.",
        ["Full-time staff are entitled to 25 days of paid annual leave."],
    )
    assert check_grounding(text, sources).claims[0].verdict == "supported"
    assert check_grounding(text, sources, VerifierConfig(entailment_threshold=1.01)).claims[0].verdict == "unverifiable"
    text = "The hospital has 350 beds."
    sources = ["The hospital has 420 beds."]
    assert check_grounding(text, sources).claims[0].verdict == "contradicted"
    strict = VerifierConfig(contradiction_threshold=1.0)
    assert check_grounding(text, sources, strict).claims[0].verdict == "unverifiable"


def test_each_text_is_embedded_once_and_then_read_from_the_cache():
    embedder = Embedder(cache_size=64)
    text = " ".join(f"Server {i} has {i + 2} cores." for i in range(12))
    sources = [" ".join(f"Server {i} has {i + 3} cores." for i in range(12)), "Each server has 64 GB of RAM."]
    result = check_grounding(text, sources, embedder=embedder)
    assert result.total_claims == 12
    # 12 claims + 13 source sentences, one onnxruntime run each (the packaged graph's activation
    # scales are per run, so texts are not batched: judges/verifier/embedder.py)
    assert embedder.runs == 25
    again = check_grounding(text, sources, embedder=embedder)
    assert embedder.runs == 25  # every text from the cache
    assert [c.verdict for c in again.claims] == [c.verdict for c in result.claims]


def test_embedder_is_process_wide_and_normalised():
    a, b = get_embedder(threads=1), get_embedder(threads=1)
    assert a is b and a.load_time_ms > 0
    vectors = a.encode(["The cat sat on the mat.", "A cat was sitting on a mat.", "Stock markets fell today."])
    norms = (vectors**2).sum(axis=1)
    assert norms == pytest.approx([1.0, 1.0, 1.0], abs=1e-4)
    assert vectors[0] @ vectors[1] > 0.7 > vectors[0] @ vectors[2]


def test_find_contradictions_between_claims_of_one_answer():
    claims = [
        "The Eiffel Tower was completed in 1889.",
        "Paris is the capital of France.",
        "The Eiffel Tower was completed in 1899.",
        "Premium users get 1,000 requests per minute.",
        "Premium users get 2,000 requests per minute.",
        "The bakery opens at 7 a.m.",
    ]
    found = find_contradictions(claims)
    pairs = {(a, b) for a, b, _ in found}
    assert pairs == {(claims[0], claims[2]), (claims[3], claims[4])}
    reasons = {reason for _, _, reason in found}
    assert any("1889" in r and "1899" in r for r in reasons)
    assert find_contradictions(claims[:2]) == []
    assert find_contradictions([]) == []


def test_concurrent_checks_share_one_model_and_agree():
    from concurrent.futures import ThreadPoolExecutor

    text = "Premium users get 500 requests per minute. The Eiffel Tower was completed in 1889."
    sources = ["Premium users get 1,000 requests per minute.", "The Eiffel Tower was completed in 1889."]
    with ThreadPoolExecutor(max_workers=4) as pool:
        embedders = list(pool.map(lambda _: get_embedder(threads=1), range(8)))
        results = list(pool.map(lambda _: check_grounding(text, sources).to_dict(), range(8)))
    assert all(e is embedders[0] for e in embedders)
    assert all(r == results[0] for r in results)
    assert [c["verdict"] for c in results[0]["claims"]] == ["contradicted", "supported"]


# --------------------------------------------------------------------------- development set


@pytest.fixture(scope="module")
def devset():
    from verifier_lab.evaluate import load, run

    return {half: run(load(half)) for half in ("fit", "test")}


def _recall(results, label, rows=lambda r: True):
    picked = [(r, v) for r, v, _ in results if r["label"] == label and rows(r)]
    return sum(v == label for _, v in picked) / len(picked)


def _own(row):
    return not row["origin"].startswith(("WiCE", "CLIMATE-FEVER", "derived"))


def _independent(row):
    return row["origin"].startswith("independent")


def test_devset_is_large_labelled_and_split(devset):
    rows = [r for results in devset.values() for r, _, _ in results]
    assert len(rows) >= 600
    assert all(r["label"] in LABELS and r["kind"] and r["origin"] and r["licence"] for r in rows)
    public = [r for r in rows if not _own(r)]
    assert len(public) > len(rows) / 2  # most rows come from public benchmarks (or are derived from them)
    groups = {}
    for half, results in devset.items():
        for r, _, _ in results:
            assert groups.setdefault(r["group"], half) == half  # a group never straddles the halves
    table_kinds = {
        "supported": {"verbatim", "number_format", "paraphrase", "two_sources", "inference"},
        "contradicted": {"number", "date", "unit", "quantifier", "negation", "entity", "comparison"},
        "unverifiable": {"unrelated", "missing_fact", "partial_overlap"},
    }
    for label, kinds in table_kinds.items():
        assert kinds <= {r["kind"] for r in rows if r["label"] == label}, label


def test_devset_recall_per_label_and_kind(devset, record_property):
    from verifier_lab.evaluate import format_table

    for half in ("fit", "test"):
        print("\n" + format_table(f"devset {half} half (default thresholds)", devset[half]))
        own = [x for x in devset[half] if _own(x[0])]
        print(format_table(f"devset {half} half, hand-written rows only", own))
        independent = [x for x in devset[half] if _independent(x[0])]
        print(format_table(f"devset {half} half, the independent author's rows", independent))
    for label in LABELS:
        record_property(f"devset_test_recall_{label}", round(_recall(devset["test"], label), 3))
    for label, floor in DEVSET_FLOORS.items():
        assert _recall(devset["test"], label) >= floor, label
    for label, floor in DEVSET_OWN_FLOORS.items():
        assert _recall(devset["test"], label, _own) >= floor, label
    for label, floor in DEVSET_INDEPENDENT_FLOORS.items():
        assert _recall(devset["test"], label, _independent) >= floor, label


def test_devset_verdicts_explain_themselves(devset):
    for results in devset.values():
        for row, _, check in results:
            for c in check.claims:
                assert c.probabilities is not None
                assert sum(c.probabilities.values()) == pytest.approx(1.0, abs=1e-3)
                assert c.decided_by in ("combiner", "fact_backstop")
                if c.decided_by == "combiner":
                    assert c.confidence == pytest.approx(c.probabilities[c.verdict], abs=1e-4)
                else:
                    assert c.verdict == "contradicted" and c.probabilities["contradicted"] < c.confidence
                assert c.evidence
                for used in c.evidence:  # every span used is quoted from the source it names
                    k = int(used["source_id"].removeprefix("source-"))
                    assert used["span"] in row["sources"][k]
                if c.verdict == "contradicted":
                    assert c.failed == c.reason


def test_cross_encoder_training_data_leaves_out_every_devset_group():
    """The packaged cross-encoder never saw a development-set pair (so the combiner, fitted on the
    fit half with its outputs as features, sees them on unseen pairs), nor a test-half group."""
    from verifier_lab.build_devset import half_of
    from verifier_lab.build_nli_data import _skip
    from verifier_lab.evaluate import load

    groups = {r["group"] for r in load()}
    assert all(_skip(g, groups) for g in groups)
    fresh = [f"wice-unsampled-{i}" for i in range(40)]
    assert {_skip(g, groups) for g in fresh} == {True, False}
    assert all(_skip(g, groups) == (half_of(g) == "test") for g in fresh)


@pytest.mark.parametrize(
    "stored, written",
    [
        (
            "Two women are embracing while holding to go packages . ",
            "Two women are embracing while holding to go packages.",
        ),
        ("The man is n't happy , he 's sad .", "The man isn't happy, he's sad."),
        ("A ( red ) ball ; a dog 's toy !", "A (red) ball; a dog's toy!"),
    ],
)
def test_snli_as_stored_reads_back_as_written_text(stored, written):
    from verifier_lab.build_nli_data import _detokenise

    assert _detokenise(stored) == written


def test_composed_pairs_take_the_label_of_their_weakest_part():
    """build_nli_data --compose (tried, not shipped: crossencoder/README.md): a claim joining two
    facts is entailed only when the premise holds both sentences."""
    import random
    import re

    from verifier_lab.build_nli_data import composed

    labels = ["entailment", "neutral", "contradiction"]
    pool = [
        {"premise": f"Premise number {i}.", "hypothesis": f"The fact {i} holds.", "label": labels[i % 3], "origin": "t"}
        for i in range(60)
    ]
    made = composed(pool, random.Random(1), 200)
    assert {p["origin"].split()[1] for p in made} == {"both", "one_missing", "second_label", "distractor"}
    for p in made:
        stated = {int(n) for n in re.findall(r"Premise number (\d+)", p["premise"])}
        facts = [int(n) for n in re.findall(r"fact (\d+)", p["hypothesis"])]
        if p["origin"] == "composed distractor":
            assert len(facts) == 1 and facts[0] in stated and p["label"] == labels[facts[0] % 3]
        elif not set(facts) <= stated:
            assert len(facts) == 2 and p["label"] == "neutral"  # a fact whose sentence is not in the premise
        else:
            worst = max(facts, key=lambda n: [0, 1, 2][n % 3])  # contradiction over neutral over entailment
            assert len(facts) == 2 and p["label"] == labels[worst % 3]


def test_fresh_independent_pairs_hold_on_their_untouched_half(record_property):
    """160 pairs a second author wrote on 2026-11-26 without seeing the verifier; the failures of
    the "looked" half were read to find what to mend, those of the "untouched" half never were."""
    from verifier_lab.evaluate import FRESH

    _holds_on_untouched_half(FRESH, 160, FRESH_UNTOUCHED_FLOORS, "fresh", record_property)


def test_second_fresh_pairs_hold_on_their_untouched_half(record_property):
    """600 pairs four more authors wrote on 2026-11-27 without seeing the verifier, split by a hash
    of each pair's id; the failures of the "looked" half were read to find what to mend, those of
    the "untouched" half never were."""
    from verifier_lab.evaluate import FRESH2

    _holds_on_untouched_half(FRESH2, 600, FRESH2_UNTOUCHED_FLOORS, "fresh2", record_property)


def test_third_fresh_pairs_hold_on_their_untouched_half(record_property):
    """600 pairs four further authors wrote on 2026-11-27 on other domains (contracts, insurance,
    dosing, sport, finance, history, science, …), split and read as the second set was."""
    from verifier_lab.evaluate import FRESH3

    _holds_on_untouched_half(FRESH3, 600, FRESH3_UNTOUCHED_FLOORS, "fresh3", record_property)


def test_fourth_fresh_pairs_hold(record_property):
    """600 pairs four more authors wrote on 2026-11-27 as an evaluation set only: all of them are
    the untouched half, and nothing is trained or fitted on them."""
    from verifier_lab.evaluate import FRESH4

    _holds_on_untouched_half(FRESH4, 600, FRESH4_UNTOUCHED_FLOORS, "fresh4", record_property)


def test_fifth_fresh_pairs_hold(record_property):
    """600 pairs four more authors wrote from a shorter brief (issue 10's table of kinds and what
    the labels mean, nothing of the training rounds' guidance): an evaluation set only, all
    untouched, nothing trained or fitted on them."""
    from verifier_lab.evaluate import FRESH5

    _holds_on_untouched_half(FRESH5, 600, FRESH5_UNTOUCHED_FLOORS, "fresh5", record_property)


def _holds_on_untouched_half(path, count: int, floors: dict, name: str, record_property) -> None:
    """Both halves of a fresh file printed, the untouched half's recall held to ``floors``."""
    from verifier_lab.evaluate import format_table, load, run

    halves = {half: run(load(half, path)) for half in ("looked", "untouched")}
    rows = [r for results in halves.values() for r, _, _ in results]
    assert len(rows) == count and all(r["label"] in LABELS and r["kind"] and r["licence"] for r in rows)
    for half, results in halves.items():
        if results:  # fresh4.jsonl and fresh5.jsonl have no looked half
            print("\n" + format_table(f"{path.name}, {half} half", results))
    for label, floor in floors.items():
        record_property(f"{name}_untouched_recall_{label}", round(_recall(halves["untouched"], label), 3))
        assert _recall(halves["untouched"], label) >= floor, label


def test_a_sufficient_facts_row_gives_the_full_and_the_reduced_evidence():
    """build_nli_data --with-extra (the packaged model's data): the claim against the evidence as
    it was (its label) and without the removed constituent (neutral when that left too little)."""
    from verifier_lab.build_nli_data import sufficient_pairs

    row = {
        "claim": "Nina Jacobson worked for Buena Vista Motion Pictures Group until July.",
        "evidence": [["Nina Jacobson", "Nina Jacobson ( born 1965 ) is an American film executive ."]],
        "label_before": "SUPPORTS",
        "label_after": "NOT ENOUGH",
        "text_orig": '[[Nina Jacobson]] Nina Jacobson ( born 1965 ) is an American film executive <span style="color:'
        'red;">who , until July 2006 , was president of the Buena Vista Motion Pictures Group</span> .',
    }
    full, reduced = sufficient_pairs(row, "t")
    assert full["label"] == "entailment" and reduced["label"] == "neutral"
    assert full["premise"] == (
        "Nina Jacobson (born 1965) is an American film executive who, until July 2006, was president of the "
        "Buena Vista Motion Pictures Group."
    )
    assert reduced["premise"] == "Nina Jacobson (born 1965) is an American film executive."
    assert [p["label"] for p in sufficient_pairs(row | {"label_before": "REFUTES", "label_after": "ENOUGH"}, "t")] == [
        "contradiction",
        "contradiction",
    ]
    assert sufficient_pairs(row | {"label_before": "NOT ENOUGH INFO"}, "t") == []
