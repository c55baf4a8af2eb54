"""Training pairs for the verifier's cross-encoder (premise, hypothesis, label), from public data.

    python -m verifier_lab.build_nli_data --mirror /work/.mirror --out .train/nli.jsonl

Reads local git snapshots (``<owner>+<name>/repo``) of five public repositories; nothing is
downloaded. **No pair comes from a group of the development set**: WiCE and CLIMATE-FEVER rows
are grouped exactly as ``build_devset`` groups them (``wice-<id>``, ``cf-<claim id>``), and a
group that the development set holds, or whose hash puts it in the test half, is skipped whole.
So the test half stays untouched by the cross-encoder, and the combiner, fitted on the fit half
with the cross-encoder's outputs as features, sees them on pairs the cross-encoder never saw
(its out-of-fold figures are honest).

* WiCE (github.com/ryokamoi/wice, oracle_chunks dev+test; ODC-BY annotations): the claim against
  its oracle evidence sentences; supported → entailment, partially/not supported → neutral.
* CLIMATE-FEVER (github.com/tdiggelm/climate-fever-dataset; Wikipedia text CC BY-SA 3.0): each
  claim against each of its five evidence sentences, majority label.
* Breaking NLI (github.com/BIU-NLP/Breaking_NLI; CC BY-SA 4.0): SNLI premises with one word
  replaced (antonyms, co-hyponyms, synonyms): who-or-what swaps the fact rules miss.
* TaxiNLI (github.com/microsoft/TaxiNLI, ``taxinli10k_MNLIDev.tsv``; Computational Use of Data
  Agreement): MultiNLI development pairs across ten genres (MultiNLI text: OANC / CC BY-SA).
* MED (github.com/verypluming/MED; CC BY-SA 4.0): monotonicity entailment (quantifiers,
  negation, "no delegate finished the report" vs "... on time").
* Derived contradictions: every entailed pair above with one fact changed by
  :func:`build_devset.perturb` (a number, a year, a month, a name, a negated auxiliary).

Only with ``--with-snli`` (alone, tried and not shipped; with ``--with-extra``, shipped: the data
card says both), before the derived contradictions are made:

* SNLI development and test pairs (github.com/OanaMariaCamburu/e-SNLI, ``dataset/eSNLI``: its
  tokenised copy of SNLI; e-SNLI MIT, SNLI CC BY-SA 4.0): short everyday sentences in three
  balanced labels, what the model leaned to call contradictions when it had too few of them.
* HANS's MNLI contradictions (github.com/tommccoy1/hans, ``mnli_contradicting_examples``; MIT):
  MultiNLI pairs whose hypothesis drops or adds a negation.

Only with ``--with-extra`` (added 2026-11-26; the packaged model is trained with it and with
``--with-snli``, its data card says why):

* ConjNLI (github.com/swarnaHub/ConjNLI, ``data/NLI/adversarial_train_15k.tsv``; MIT): Wikipedia
  sentences joined by "and", "but", "or", with a conjunct dropped, kept or changed -- claims that
  join facts, as the verifier's do.
* Counterfactually augmented SNLI (github.com/acmi-lab/counterfactually-augmented-data,
  ``NLI/all_combined``; Apache-2.0): SNLI pairs with a minimal edit that flips the label.
* Negation in NLI (github.com/mosharafhossain/negation-and-nli, ``new_benchmarks/clean_data``;
  MIT): MultiNLI and SNLI pairs with a negation added where it matters.
* SufficientFacts (github.com/copenlu/sufficient_facts; MIT per its dataset card, the repository
  has no licence file; evidence from Wikipedia, CC BY-SA): FEVER, HoVer and VitaminC claims with
  their full evidence (supports / refutes) and with a constituent removed, annotated as still
  enough (the same label) or not enough (neutral) -- same topic, the fact missing.

Labels are written as words; ``train_cross_encoder.LABEL2ID`` gives their ids.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
import re
import zipfile
from collections import Counter
from pathlib import Path

from verifier_lab.build_devset import _git_bytes, _git_show, half_of, perturb
from verifier_lab.evaluate import load
from verifier_lab.train_cross_encoder import LABEL2ID

MAX_PREMISE_CHARS = 1200


def _skip(group: str, devset_groups: set[str]) -> bool:
    return group in devset_groups or half_of(group) == "test"


def _pair(premise: str, hypothesis: str, label: str, origin: str) -> dict:
    return {"premise": premise[:MAX_PREMISE_CHARS], "hypothesis": hypothesis, "label": label, "origin": origin}


def wice(mirror: Path, devset_groups: set[str]) -> list[dict]:
    out = []
    for split in ("dev", "test"):
        text = _git_show(
            mirror, "ryokamoi+wice", f"code_and_resources/entailment_inputs/oracle_chunks/claim/{split}.jsonl"
        )
        for line in text.splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            meta = r["meta"]
            if _skip(f"wice-{meta['id']}", devset_groups):
                continue
            pos = {ci: k for k, ci in enumerate(meta["chunk_idx"])}
            oracle = sorted(pos[i] for i in meta.get("oracle_idx") or [] if i in pos)
            ev = r["evidence"]
            keep = oracle or list(range(min(4, len(ev))))
            premise = " ".join(ev[k].strip() for k in keep if ev[k].strip())
            if not premise:
                continue
            label = "entailment" if r["label"] == "supported" else "neutral"
            origin = f"WiCE {split} {meta['id']}"
            out.append(_pair(premise, r["claim"], label, origin))
            if r["label"] != "supported" or not oracle:
                continue
            # the same evidence among its neighbours (runtime evidence carries neighbours too),
            # and the page without its oracle sentences: same topic, the fact missing
            near = sorted({k for o in oracle for k in (o - 1, o, o + 1) if 0 <= k < len(ev)})
            if len(near) > len(oracle):
                out.append(_pair(" ".join(ev[k].strip() for k in near), r["claim"], "entailment", origin + " +context"))
            rest = [ev[k].strip() for k in range(len(ev)) if k not in set(oracle) and ev[k].strip()][:4]
            if rest:
                out.append(_pair(" ".join(rest), r["claim"], "neutral", origin + " -oracle"))
    return out


def climate_fever(mirror: Path, devset_groups: set[str]) -> list[dict]:
    text = _git_show(mirror, "tdiggelm+climate-fever-dataset", "dataset/climate-fever.jsonl")
    label = {"SUPPORTS": "entailment", "REFUTES": "contradiction", "NOT_ENOUGH_INFO": "neutral"}
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        if _skip(f"cf-{r['claim_id']}", devset_groups):
            continue
        for e in r["evidences"]:
            votes = Counter(v for v in e["votes"] if v)
            if not votes or votes.most_common(1)[0][1] < 2:
                continue  # no majority among the annotators
            out.append(_pair(e["evidence"], r["claim"], label[e["evidence_label"]], f"CLIMATE-FEVER {r['claim_id']}"))
    return out


def breaking_nli(mirror: Path, rng: random.Random, limit: int = 5000) -> list[dict]:
    blob = _git_bytes(mirror, "BIU-NLP+Breaking_NLI", "breaking_nli_dataset.zip")
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        lines = z.read("data/dataset.jsonl").decode("utf-8").splitlines()
    rows = [json.loads(x) for x in lines if x.strip()]
    rng.shuffle(rows)
    return [
        _pair(r["sentence1"], r["sentence2"], r["gold_label"], f"Breaking NLI {r['pairID']}")
        for r in rows[:limit]
        if r["gold_label"] in LABEL2ID
    ]


def _tsv(mirror: Path, repo: str, path: str) -> list[dict]:
    text = _git_show(mirror, repo, path)
    return list(csv.DictReader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE))


def taxinli(mirror: Path) -> list[dict]:
    return [
        _pair(r["prem"], r["hyp"], r["label"], f"TaxiNLI {r['pairID']}")
        for r in _tsv(mirror, "microsoft+TaxiNLI", "taxinli10k_MNLIDev.tsv")
        if r.get("label") in LABEL2ID and r.get("prem") and r.get("hyp")
    ]


def med(mirror: Path) -> list[dict]:
    return [
        _pair(r["sentence1"], r["sentence2"], r["gold_label"], f"MED {r['index']}")
        for r in _tsv(mirror, "verypluming+MED", "MED.tsv")
        if r.get("gold_label") in LABEL2ID and r.get("sentence1") and r.get("sentence2")
    ]


_DETOKENISE = re.compile(r" (?=[.,!?;:)]|'s\b|n't\b|'re\b|'ll\b|'ve\b|'m\b|'d\b)")


def _detokenise(text: str) -> str:
    """SNLI as e-SNLI stores it ("Two women are embracing ." ) back to written text."""
    return _DETOKENISE.sub("", " ".join(text.split())).replace("( ", "(")


def snli(mirror: Path) -> list[dict]:
    out = []
    for split in ("dev", "test"):
        files = [
            _git_show(mirror, "OanaMariaCamburu+e-SNLI", f"dataset/eSNLI/{n}.{split}").splitlines()
            for n in ("s1", "s2", "labels")
        ]
        for i, (premise, hypothesis, label) in enumerate(zip(*files, strict=True)):
            if label.strip() in LABEL2ID and premise.strip() and hypothesis.strip():
                out.append(_pair(_detokenise(premise), _detokenise(hypothesis), label.strip(), f"SNLI {split} {i}"))
    return out


def hans_mnli(mirror: Path) -> list[dict]:
    out = []
    for i, line in enumerate(_git_show(mirror, "tommccoy1+hans", "mnli_contradicting_examples").splitlines()):
        cells = [c.strip() for c in line.split("\t")]
        if len(cells) == 3 and cells[2] in LABEL2ID and cells[0] and cells[1]:
            out.append(_pair(cells[0], cells[1], cells[2], f"HANS-MNLI {i}"))
    return out


def conjnli(mirror: Path) -> list[dict]:
    text = _git_show(mirror, "swarnaHub+ConjNLI", "data/NLI/adversarial_train_15k.tsv").lstrip("\ufeff")
    rows = csv.DictReader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE)
    return [
        _pair(r["Premise"], r["Hypothesis"], r["Label"], f"ConjNLI {i}")
        for i, r in enumerate(rows)
        if r.get("Label") in LABEL2ID and r.get("Premise") and r.get("Hypothesis")
    ]


def cad_snli(mirror: Path) -> list[dict]:
    return [
        _pair(r["sentence1"], r["sentence2"], r["gold_label"], f"CAD-SNLI {split} {i}")
        for split in ("train", "dev", "test")
        for i, r in enumerate(_tsv(mirror, "acmi-lab+counterfactually-augmented-data", f"NLI/all_combined/{split}.tsv"))
        if r.get("gold_label") in LABEL2ID and r.get("sentence1") and r.get("sentence2")
    ]


def negation_nli(mirror: Path) -> list[dict]:
    out = []
    for name in ("MNLI", "SNLI"):
        blob = _git_bytes(mirror, "mosharafhossain+negation-and-nli", f"data/new_benchmarks/clean_data/{name}.txt")
        rows = csv.DictReader(io.StringIO(blob.decode("cp1252")), delimiter="\t", quoting=csv.QUOTE_NONE)
        out += [
            _pair(r["Text"], r["Hypothesis"], r["gold_label"], f"Negation-NLI {name} {r['index']}")
            for r in rows
            if r.get("gold_label") in LABEL2ID and r.get("Text") and r.get("Hypothesis")
        ]
    return out


_SUFFICIENT = {"SUPPORTS": "entailment", "REFUTES": "contradiction"}
_MARKED = re.compile(r'<span style="color:red;">(.*?)</span>')


def sufficient_pairs(r: dict, origin: str) -> list[dict]:
    """A SufficientFacts row's two pairs: the claim against its full evidence (the label before
    the removal) and against the evidence with a constituent removed (the label after: "not
    enough" is neutral, "enough" keeps the label). A row labelled otherwise gives none."""
    before = _SUFFICIENT.get(r.get("label_before", ""))
    if before is None:
        return []
    after = "neutral" if r.get("label_after") == "NOT ENOUGH" else before
    full = _detokenise(re.sub(r"\[\[.*?\]\]", "", _MARKED.sub(r"\1", r["text_orig"])))
    reduced = _detokenise(" ".join(sentence for _, sentence in r["evidence"]))
    return [_pair(full, r["claim"], before, origin), _pair(reduced, r["claim"], after, origin + " -removed")]


def sufficient_facts(mirror: Path) -> list[dict]:
    out = []
    for name in ("fever", "hover", "vitaminc"):
        text = _git_show(mirror, "copenlu+sufficient_facts", f"data/sufficient_facts/{name}_sufficient_facts.jsonl")
        for i, line in enumerate(text.splitlines()):
            if line.strip():
                out += sufficient_pairs(json.loads(line), f"SufficientFacts {name} {i}")
    return out


def extra(mirror: Path) -> list[dict]:
    return conjnli(mirror) + cad_snli(mirror) + negation_nli(mirror) + sufficient_facts(mirror)


def derived(pairs: list[dict], rng: random.Random) -> list[dict]:
    out = []
    for i, p in enumerate(pairs):
        if p["label"] != "entailment":
            continue
        row = {"id": str(i), "claim": p["hypothesis"], "sources": [p["premise"]], "origin": p["origin"]}
        d = perturb(row, rng)
        if d is not None:
            out.append(_pair(p["premise"], d["claim"], "contradiction", d["origin"]))
    return out


#: Words that may start a sentence in lower case once it follows "and" (anything else, a name
#: above all, keeps its capital).
_LOWER_AFTER_AND = frozenset("the a an this that these those it its there their they he she his her we our".split())
COMPOSED_SHORT = 400  # premises longer than this are not composed (the joined text stays readable)


def _and(first: str, second: str) -> str:
    head = first.strip().rstrip(".!?;, ")
    word = second.strip().split(" ", 1)[0]
    tail = second.strip()
    if word.lower() in _LOWER_AFTER_AND:
        tail = tail[0].lower() + tail[1:]
    return f"{head}, and {tail}"


def composed(pairs: list[dict], rng: random.Random, n: int) -> list[dict]:
    """Pairs made of two pairs, as the verifier presents evidence: several sentences, maybe from
    several sources, joined into one premise, and claims that state more than one fact.

    * both facts stated, each by its own sentence: entailment (facts spread over two sources);
    * one fact stated, the other only in a sentence that is *not* in the premise (an unrelated
      sentence stands in its place, so the length gives nothing away): neutral (a claim that
      adds a detail to what the sources say);
    * one fact stated, the other contradicted, or the other's sentence silent on it: the
      second pair's label (a claim is as good as its worst part);
    * one pair's premise with an unrelated sentence beside it: the pair's own label (evidence
      arrives among its neighbours).

    The kinds share one pool and one surface (two sentences, one "and"), so the surface of a
    pair says nothing of its label. (The data card says what they did: not shipped.)"""
    pool = [p for p in pairs if len(p["premise"]) <= COMPOSED_SHORT and len(p["hypothesis"]) <= 200]
    by = {label: [p for p in pool if p["label"] == label] for label in LABEL2ID}
    out: list[dict] = []

    def two(a: str, b: str) -> str:
        return f"{a} {b}" if rng.random() < 0.5 else f"{b} {a}"

    def claim(a: str, b: str) -> str:
        return _and(a, b) if rng.random() < 0.5 else _and(b, a)

    kinds = ("both", "one_missing", "second_label", "second_label", "distractor")
    for i in range(n):
        kind = kinds[i % len(kinds)]
        first, other = rng.choice(pool if kind == "distractor" else by["entailment"]), rng.choice(pool)
        if other["premise"] == first["premise"]:
            continue
        if kind == "distractor":
            out.append(
                _pair(
                    two(first["premise"], other["premise"]), first["hypothesis"], first["label"], "composed distractor"
                )
            )
            continue
        second = rng.choice(by["entailment"] if kind != "second_label" else by["contradiction"] + by["neutral"])
        if second["premise"] in (first["premise"], other["premise"]):
            continue
        if kind == "both":
            premise, label = two(first["premise"], second["premise"]), "entailment"
        elif kind == "one_missing":
            premise, label = two(first["premise"], other["premise"]), "neutral"
        else:
            premise, label = two(first["premise"], second["premise"]), second["label"]
        out.append(_pair(premise, claim(first["hypothesis"], second["hypothesis"]), label, f"composed {kind}"))
    return out


def build(
    mirror: Path, seed: int = 10, with_snli: bool = False, compose: int = 0, with_extra: bool = False
) -> list[dict]:
    rng = random.Random(seed)
    devset_groups = {r["group"] for r in load()}
    pairs = wice(mirror, devset_groups) + climate_fever(mirror, devset_groups) + breaking_nli(mirror, rng)
    pairs += taxinli(mirror) + med(mirror)
    if with_snli:
        pairs += snli(mirror) + hans_mnli(mirror)
    pairs += derived(pairs, rng)
    if compose:
        pairs += composed(pairs, rng, compose)
    if with_extra:  # after the derived pairs: the same rng draws make the shipped set without it
        pairs += extra(mirror)
    rng.shuffle(pairs)
    return pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", default="/work/.mirror", type=Path)
    ap.add_argument("--out", default=Path(".train/nli.jsonl"), type=Path)
    ap.add_argument(
        "--with-snli",
        action="store_true",
        help="add SNLI dev/test and HANS's MNLI contradictions (the packaged model: with --with-extra)",
    )
    ap.add_argument("--compose", type=int, default=0, help="add this many pairs made of two pairs (composed())")
    ap.add_argument("--with-extra", action="store_true", help="add ConjNLI, CAD-SNLI, Negation-NLI, SufficientFacts")
    args = ap.parse_args()
    pairs = build(args.mirror, with_snli=args.with_snli, compose=args.compose, with_extra=args.with_extra)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as fh:
        for p in pairs:
            fh.write(json.dumps(p, ensure_ascii=False) + "\n")
    by = Counter(p["label"] for p in pairs)
    origins = Counter(p["origin"].split(" ")[0] for p in pairs)
    print(f"{len(pairs)} pairs -> {args.out}: {dict(by)}; by origin {dict(origins)}")


if __name__ == "__main__":
    main()
