"""Evidence for one claim: the source sentences that together cover it, and the features the
learned combiner (:mod:`judges.verifier.combiner`) decides on.

A claim is often supported by two sentences of one source, or by sentences of two sources
("launched in 1990" in one, "orbits at 540 km" in another). So the evidence is built greedily:
the best single sentence first (most of the claim's wording and values, no blocking conflict),
then the sentence -- from any source -- that adds most of what is still uncovered, up to
``MAX_EVIDENCE_SPANS``. Coverage and fact matching are then measured on the sentences together.

Conflicts (a changed number, date, unit, name, a negation, a reversed comparison, a quantifier)
are measured sentence by sentence, as :func:`judges.verifier.facts.align` gives them, and enter
the features as the highest confidence per kind together with how much of the claim the
conflicting sentence covers: whether a conflict outweighs a supporting sentence is learned.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from .facts import Alignment, Analysis, Conflict, align, analyse
from .facts.work import Work

#: At most this many sentences make up the evidence of one claim.
MAX_EVIDENCE_SPANS = 3
#: A sentence joins the evidence only if it raises the claim's coverage by at least this much.
MIN_GAIN = 0.05
#: A conflict at least this confident blocks a sentence from opening the evidence.
BLOCKING_CONFLICT = 0.5

_CONFLICT_GROUPS = {
    "number": "numeric",
    "unit": "numeric",
    "date": "numeric",
    "time": "numeric",
    "ordinal": "numeric",
    "comparison": "numeric",
    "entity": "entity",
    "negation": "negation",
    "antonym": "direction",
    "comparative": "direction",
    "quantifier": "quantifier",
}
GROUPS = ("numeric", "entity", "negation", "direction", "quantifier")

#: Feature names, in the order the combiner's weights use (training writes them to combiner.json).
FEATURES = (
    "sim_top",
    "sim_evidence",
    "cov_single",
    "cov_union",
    "cov_words_union",
    "uncovered_union",
    "missing",
    "facts_claim",
    "facts_matched",
    "has_facts",
    "spans_used",
    "sources_used",
    *(f"conflict_{g}" for g in GROUPS),
    "conflict_cov",
    "conflict_x_cov",
    "conflict_on_evidence",
    "claim_words",
    "rule_support",
    "rule_supported",
    "rule_contradicted",
    "missing_rival",
    "missing_no_rival",
    "conflict_margin",
    "conflict_x_margin",
    "uncovered_run",
    # the packaged cross-encoder on (evidence, claim): judges/verifier/crossencoder/README.md
    "nli_entailment",
    "nli_contradiction",
    "nli_neutral",
)

#: The hand-set support score of the earlier rule-based path (0.5 * similarity + 0.5 * coverage,
#: mapped so that 0.7 sits on the raw cut 0.58); kept as a feature beside the new ones.
_RULE_CUT, _RULE_SLOPE = 0.58, 1.5


def rule_support(sim: float, coverage: float) -> float:
    raw = 0.5 * sim + 0.5 * coverage
    return float(min(1.0, max(0.0, 0.7 + _RULE_SLOPE * (raw - _RULE_CUT))))


def _rule_verdict(relevant: list[Candidate], whole: list[bool]) -> tuple[float, float, float]:
    """The earlier rules' verdict as features: (best support score, supported?, contradicted?)."""
    scores = [(c, rule_support(c.sim, c.alignment.support_coverage)) for c in relevant]
    ok = [(c, s) for c, s in scores if c.blocking is None and not c.alignment.missing and s >= 0.7]
    contra = [
        c
        for c in relevant
        if c.alignment.best_conflict is not None
        and not whole[c.span_index]
        and c.alignment.best_conflict.confidence >= 0.7
    ]
    if ok and contra:
        if max(c.alignment.coverage for c in contra) <= max(c.alignment.coverage for c, _ in ok):
            contra = []
        else:
            ok = []
    best = max((s for c, s in scores if c.blocking is None and not c.alignment.missing), default=0.0)
    return best, float(bool(ok)), float(bool(contra) and not ok)


@dataclass
class Candidate:
    span_index: int
    sim: float
    alignment: Alignment

    @property
    def blocking(self) -> Conflict | None:
        c = self.alignment.best_conflict
        return c if c is not None and c.confidence >= BLOCKING_CONFLICT else None


def settle_negations(candidates: list[Candidate]) -> list[Candidate]:
    """A claim's negation that one sentence states alike is no mismatch with the sentences that
    state its other parts: "Do not take more than 8 tablets in 24 hours, and leave at least 4
    hours between doses" against "Do not take more than 8 tablets in 24 hours. Leave at least 4
    hours between doses." -- the second sentence, without a "not", was a negation mismatch."""
    alike = any(c.alignment.negated_alike for c in candidates)
    if not alike:
        return candidates
    return [
        c
        if c.alignment.negated_alike or not any(x.kind == "negation" for x in c.alignment.conflicts)
        else Candidate(
            c.span_index,
            c.sim,
            replace(c.alignment, conflicts=[x for x in c.alignment.conflicts if x.kind != "negation"]),
        )
        for c in candidates
    ]


@dataclass
class Evidence:
    spans: list[int]  # span indices, the opening (best single) sentence first
    alignment: Alignment  # the claim aligned with the evidence sentences together
    features: dict[str, float] = field(default_factory=dict)
    conflict: Conflict | None = None  # the most confident conflict among the candidates
    conflict_span: int | None = None


def premise(ev: Evidence, sentences: list[str], previous: list[str | None]) -> str:
    """The text the cross-encoder reads for a claim: its evidence sentences and, when another
    sentence holds the most confident conflict, that one too (it may be the one that decides)."""
    indices = list(ev.spans)
    if ev.conflict_span is not None and ev.conflict_span not in indices:
        indices.append(ev.conflict_span)
    return _joined(indices, sentences, previous)


def _joined(indices: list[int], sentences: list[str], previous: list[str | None]) -> str:
    parts: list[str] = []
    for i in indices:
        for t in (previous[i], sentences[i]):
            if t and t not in parts:
                parts.append(t)
    return " ".join(parts)


def build(
    claim: Analysis,
    candidates: list[Candidate],
    sentences: list[str],
    previous: list[str | None],
    sources_of: list[int],
    everything: Analysis,
    claim_vec: np.ndarray,
    span_vecs: np.ndarray,
    relevance_floor: float,
    whole: list[bool] | None = None,
    work: Work | None = None,
) -> Evidence:
    """Select the evidence sentences of one claim and compute its features.

    ``sentences[i]`` is the whole sentence of span ``i`` (``previous[i]`` the sentence before
    when span ``i`` opens with a pronoun), ``sources_of[i]`` its source index, ``whole[i]``
    whether span ``i`` is a whole sentence that was also split into clauses. Its alignments are
    charged to ``work`` (facts/work.py), which may raise ``OverWork``.
    """
    whole = whole or [False] * len(sentences)
    relevant = [c for c in candidates if c.sim >= relevance_floor] or candidates[:1]
    free = [c for c in relevant if c.blocking is None]
    # a sentence with a conflict that covers more of the claim than a conflict-free one is the one
    # about the claim's subject: "Free users get 1,000" is about "Free users get 100", not about
    # "Premium users get 1,000" -- the conflict-free sentence cannot open the evidence then
    blockers = [c for c in relevant if c.blocking is not None and not whole[c.span_index]]
    if blockers:
        top_block = max(c.alignment.coverage for c in blockers)
        free = [c for c in free if c.alignment.coverage >= top_block]
    if free:
        first = max(free, key=lambda c: (c.alignment.support_coverage, c.sim))
    elif blockers:  # the conflicting sentence about the claim's subject is the evidence
        first = max(blockers, key=lambda c: (c.alignment.coverage, c.sim))
    else:
        first = max(relevant, key=lambda c: (c.alignment.support_coverage, c.sim))
    chosen = [first.span_index]
    union = first.alignment
    cache: dict[tuple[int, ...], Alignment] = {}
    # evidence opened by a conflicting sentence is not extended: another sentence's value would
    # only paper over the conflict with the sentence about the claim's subject
    while first.blocking is None and len(chosen) < MAX_EVIDENCE_SPANS and union.support_coverage < 0.999:
        best, best_al = None, None
        for c in relevant:
            if c.span_index in chosen or sentences[c.span_index] in {sentences[i] for i in chosen}:
                continue
            if c.blocking is not None:
                continue
            key = tuple(sorted(chosen + [c.span_index]))
            if key not in cache:
                if work is not None:
                    work.charge_text(_joined(list(key), sentences, previous))
                cache[key] = align(claim, analyse(_joined(list(key), sentences, previous)), everything, work=work)
            al = cache[key]
            if best_al is None or al.support_coverage > best_al.support_coverage:
                best, best_al = c, al
        if best is None or best_al is None or best_al.support_coverage < union.support_coverage + MIN_GAIN:
            break
        chosen.append(best.span_index)
        union = best_al
    # the claim against its evidence sentences read together (whole sentences, with the sentence
    # a pronoun refers to): coverage, matched and missing facts, and conflicts with more context
    if work is not None:
        work.charge_text(_joined(chosen, sentences, previous))
    evidence_an = analyse(_joined(chosen, sentences, previous))
    union = align(claim, evidence_an, everything, work=work)
    # a missing value with a rival of the same kind in the evidence ("2012-10" where the evidence
    # says "December 2012") hints at a contradiction; one with no rival, at an unstated fact
    used_facts = {id(sf) for _, sf in union.matched}
    rivals = [f for f in evidence_an.facts if id(f) not in used_facts]
    with_rival = sum(1 for mf in union.missing if any(f.kind == mf.kind and f.dim == mf.dim for f in rivals))

    # conflicts, sentence by sentence
    best_conf: dict[str, float] = {g: 0.0 for g in GROUPS}
    top_conflict, top_span, top_cov = None, None, 0.0
    for c in relevant:
        for conflict in c.alignment.conflicts:
            g = _CONFLICT_GROUPS.get(conflict.kind, "numeric")
            best_conf[g] = max(best_conf[g], conflict.confidence)
            if top_conflict is None or conflict.confidence > top_conflict.confidence:
                top_conflict, top_span, top_cov = conflict, c.span_index, c.alignment.coverage
    on_evidence = 0.0
    if top_span is not None and top_span in chosen:
        on_evidence = 1.0

    vec = span_vecs[chosen].sum(axis=0)
    norm = float(np.linalg.norm(vec)) or 1.0
    strong = [f for f in claim.facts if not f.weak and (f.kind != "entity" or f.dim == "identifier")]
    matched_strong = {id(cf) for cf, _ in union.matched if cf in strong}
    n_words = len(claim.content)
    features = {
        "sim_top": max(c.sim for c in candidates),
        "sim_evidence": float(claim_vec @ vec) / norm,
        "cov_single": first.alignment.support_coverage,
        "cov_union": union.support_coverage,
        "cov_words_union": union.coverage,
        "uncovered_union": float(min(len(set(union.uncovered)), 6)),
        "missing": float(min(len(union.missing), 3)),
        "facts_claim": float(min(len(strong), 4)),
        "facts_matched": len(matched_strong) / len(strong) if strong else 1.0,
        "has_facts": 1.0 if strong else 0.0,
        "spans_used": float(len(chosen)),
        "sources_used": float(len({sources_of[i] for i in chosen})),
        **{f"conflict_{g}": best_conf[g] for g in GROUPS},
        "conflict_cov": top_cov,
        "conflict_x_cov": (top_conflict.confidence if top_conflict else 0.0) * top_cov,
        "conflict_on_evidence": on_evidence,
        "claim_words": math.log1p(n_words),
    }
    # a conflicting sentence that covers more of the claim than the supporting one is about the
    # claim's own subject ("Free users get 1,000" vs "Premium users get 1,000. Free users get 100.")
    margin = top_cov - first.alignment.coverage if top_conflict is not None else 0.0
    features["conflict_margin"] = margin
    features["conflict_x_margin"] = (top_conflict.confidence if top_conflict else 0.0) * max(0.0, margin)
    # a detail the sources do not state is a run of uncovered words ("..., beating analysts'
    # expectations"); a paraphrase leaves single words uncovered here and there
    unstated = set(union.uncovered)
    run = longest = 0
    for _, w in claim.content:
        run = run + 1 if w in unstated else 0
        longest = max(longest, run)
    features["uncovered_run"] = float(min(longest, 5))
    features["missing_rival"] = float(min(with_rival, 3))
    features["missing_no_rival"] = float(min(len(union.missing) - with_rival, 3))
    features["rule_support"], features["rule_supported"], features["rule_contradicted"] = _rule_verdict(relevant, whole)
    return Evidence(chosen, union, features, top_conflict, top_span)
