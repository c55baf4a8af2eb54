"""Local grounding verifier: claims of an answer checked against its sources.

Two paths, chosen by :class:`VerifierConfig`:

Default path (``nli_model_dir=None``): packaged MiniLM embeddings, fact alignment, cross-encoder
------------------------------------------------------------------------------------------------
Similarity alone cannot tell a supported claim from a same-topic claim whose fact is
missing, and contradictions score *higher* than supported claims (they share most words
with the source). So the embedding only *finds* the source sentence, and facts decide:

1. Claims come from :func:`judges.verifier.claims.extract_claims`. Every source (top
   ``max_sources_per_claim`` by their ``score``) is split into sentences, and sentences
   into clauses at contrast markers (``;``, ", although", ", while", ", but" ...).
2. One batched embedding pass covers all claims and all source clauses of the call;
   each claim's candidates are the clauses ranked by cosine similarity.
3. Candidates of a claim: its most similar clauses (similarity ≥ ``RELEVANCE_FLOOR``) and the
   ``LEXICAL_CANDIDATES`` sentences sharing most of its content words (by stem). Each
   is aligned with the claim by :func:`judges.verifier.facts.align`, against all sources of the
   call together:

   * **conflict** -- a fact of the same kind and slot with a different value (numbers, units,
     dates, times, names, identifiers, ordinals), a negation polarity flip, an antonymic
     direction word, a reversed comparison or a universal/partial quantifier, each with a
     confidence that grows with how much of the claim's other wording the sentence shares;
   * **missing** -- a claim number, date, time or name found nowhere in the sources;
   * **coverage** -- the share of the claim's content words the sentence has (matched values
     count double).

4. Evidence (:mod:`judges.verifier.evidence`): the best single sentence, then the sentences --
   of the same or another source -- that add most of what is still uncovered (up to three).
   Coverage and fact matching are measured on them together, so a claim whose facts are spread
   over two sentences or two sources can be supported; the verdict lists every span used.

5. Cross-encoder: the packaged model in ``crossencoder/`` (fine-tuned from the same MiniLM; data
   card there) reads each claim against its evidence, one batched run for the call, and gives
   P(entailment), P(contradiction), P(neutral) as three more features.

6. Verdict: a multinomial logistic regression (:mod:`judges.verifier.combiner`, weights in
   ``combiner.json``, fitted by ``python -m verifier_lab.fit_combiner`` on the
   fitting half of verifier_lab/data/devset.jsonl) turns the features (similarities,
   single-sentence and joint coverage, missing and matched facts, the most confident conflict
   of each kind and how much of the claim its sentence covers, the earlier hand-set rules'
   verdict, the cross-encoder's probabilities) into calibrated probabilities of the three verdicts:

   * ``contradicted`` if P(contradicted) ≥ ``contradiction_threshold``;
   * else, with ``fact_backstop`` on, ``contradicted`` when the evidence opens with a sentence whose
     conflict (confidence ≥ ``contradiction_threshold``) covers the claim at least as well as any
     conflict-free sentence -- the earlier rules' contradiction, kept for an undecided combiner
     (supported or contradicted likelier than unverifiable) as on the NLI path (``decided_by``
     says which decided);
   * else ``supported`` if P(supported) ≥ ``entailment_threshold``;
   * else ``unverifiable`` (the reason says what is missing or which doubtful conflict held it
     back, and "undecided" when supported or contradicted was the more likely verdict).

   Each verdict carries ``evidence`` (the spans used), ``matched`` (facts found),
   ``failed`` (the conflict or missing fact) and ``probabilities``. Per-kind recall, and what
   the path cannot detect, are in docs/verifier.md.

NLI path (``nli_model_dir`` set): an operator's ONNX cross-encoder
-------------------------------------------------------------------
Each claim is scored against each of the top sources (premise = source text, hypothesis
= claim) in batched runs. Entailment ≥ ``entailment_threshold`` → ``supported`` (best =
highest entailment); else contradiction ≥ ``contradiction_threshold`` → ``contradicted``;
else ``unverifiable``. The deterministic fact checks are kept only as a *backstop* that
never fights the model: when the model is undecided (neither threshold reached) and the
best-matching source sentence has a number/unit/date/entity conflict whose confidence
reaches ``contradiction_threshold``, the claim is ``contradicted`` with the reason
"fact check: ...". A confident model verdict is never overturned
(``VerifierConfig.fact_backstop=False`` switches the backstop off).

Neither path calls an LLM itself: claims left undecided may be escalated to one afterwards,
when a policy or the check asks for it (judges/escalation.py, docs/verifier.md "LLM escalation").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .claims import extract_claims, split_sentences
from .combiner import get_combiner
from .conjuncts import claim_parts
from .evidence import Candidate, Evidence, premise, settle_negations
from .evidence import build as build_evidence
from .facts import WEEKDAY_NAMES, Alignment, Analysis, Conflict, align, analyse, proper_vocabulary, refers_back
from .facts.work import NOT_CHECKED, OverWork, Work, pairings
from .nli import get_nli_model

__all__ = [
    "VerifierConfig",
    "SourceMatch",
    "ClaimVerdict",
    "GroundingCheck",
    "check_grounding",
    "find_contradictions",
    "SUPPORTED",
    "CONTRADICTED",
    "UNVERIFIABLE",
]

SUPPORTED = "supported"
CONTRADICTED = "contradicted"
UNVERIFIABLE = "unverifiable"

REASON_NO_SOURCES = "GROUNDING_NO_SOURCES"
REASON_CONTRADICTION = "GROUNDING_CONTRADICTION"
REASON_UNVERIFIABLE = "GROUNDING_UNVERIFIABLE"

#: Candidates below this cosine similarity are not the same topic (not even for conflicts).
RELEVANCE_FLOOR = 0.3
#: A conflict at least this confident blocks "supported" even below the contradiction threshold.
BLOCKING_CONFLICT = 0.5
#: Default entailment / contradiction probability thresholds.
DEFAULT_THRESHOLD = 0.5
#: The packaged cross-encoder (judges/verifier/crossencoder/README.md): its probabilities on a
#: claim's evidence are features of the combiner.
CROSS_ENCODER_DIR = Path(__file__).with_name("crossencoder")
#: The work budget of the ``check_grounding`` call running (facts/work.py), for ``_gather``: offline
#: fitting replaces ``_gather`` with functions of its signature, which a new parameter would break.
_call_work: ContextVar[Work | None] = ContextVar("verifier_call_work", default=None)
#: How many of a claim's most similar clauses are aligned.
CANDIDATES_PER_CLAIM = 6


@dataclass
class VerifierConfig:
    #: Probabilities (the combiner's, on the default path; the model's, on the NLI path) a verdict
    #: needs. 0.5 = "more likely than not"; 0.7 trades recall for precision (see docs/verifier.md).
    entailment_threshold: float = DEFAULT_THRESHOLD
    contradiction_threshold: float = DEFAULT_THRESHOLD
    max_sources_per_claim: int = 5
    nli_model_dir: str | None = None
    threads: int = 1
    #: ``grounded`` is false when more than this share of claims is unverifiable.
    max_unverifiable_ratio: float = 0.5
    #: Deterministic fact conflicts may decide when the model (NLI path) or combiner (default path)
    #: is undecided.
    fact_backstop: bool = True


@dataclass
class SourceMatch:
    id: str
    content: str
    score: float
    span: str
    relevance: float | None = None  # the retrieval score the caller gave, if any


@dataclass
class ClaimVerdict:
    claim: str
    verdict: str
    confidence: float
    best_source: SourceMatch | None
    reason: str
    escalated: bool = False
    kind: str | None = None  # conflict kind for contradictions (number, date, negation ...)
    #: every source sentence the verdict rests on: [{"source_id", "span", "similarity"}]
    evidence: list[dict] = field(default_factory=list)
    #: the claim's facts found in the evidence ("1000 request", "2021-03-03 = March 3, 2021")
    matched: list[str] = field(default_factory=list)
    #: what failed: a conflict ("number mismatch: ...") or what is missing ("missing: 'Q3 2024'")
    failed: str | None = None
    #: the combiner's probabilities of the three verdicts (default path)
    probabilities: dict[str, float] | None = None
    #: "combiner" (the probabilities decided), "fact_backstop" (an undecided combiner, and a conflict
    #: on the sentence about the claim's subject at least as confident as contradiction_threshold)
    decided_by: str | None = None
    features: dict[str, float] | None = field(default=None, repr=False)  # combiner input (not serialised)
    #: what re-deciding the verdict under other thresholds needs besides ``probabilities``
    #: (policies/judged.py, used by replay and calibration): ``conflict``, the confidence of the
    #: conflict on the claim's evidence or null; ``backstop``, whether that conflict may decide
    #: for an undecided model; ``path``, "combiner" or "nli"; ``on_meaning``, whether the combiner's
    #: contradiction stands without a conflict (true since 2026-11-27; older stored claims lack it)
    thresholds_input: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("features", None)
        d["confidence"] = round(float(self.confidence), 4)
        if self.best_source is not None:
            d["best_source"]["score"] = round(float(self.best_source.score), 4)
        return d


@dataclass
class GroundingCheck:
    grounded: bool
    claims: list[ClaimVerdict] = field(default_factory=list)
    summary: str = ""
    reason_code: str | None = None
    method: str = "embedding+facts"

    @property
    def total_claims(self) -> int:
        return len(self.claims)

    def _count(self, verdict: str) -> int:
        return sum(1 for c in self.claims if c.verdict == verdict)

    @property
    def supported_count(self) -> int:
        return self._count(SUPPORTED)

    @property
    def contradicted_count(self) -> int:
        return self._count(CONTRADICTED)

    @property
    def unverifiable_count(self) -> int:
        return self._count(UNVERIFIABLE)

    @property
    def unverifiable_ratio(self) -> float:
        return round(self.unverifiable_count / self.total_claims, 4) if self.claims else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "grounded": self.grounded,
            "claims": [c.to_dict() for c in self.claims],
            "total_claims": self.total_claims,
            "supported_count": self.supported_count,
            "contradicted_count": self.contradicted_count,
            "unverifiable_count": self.unverifiable_count,
            "unverifiable_ratio": self.unverifiable_ratio,
            "summary": self.summary,
            "reason_code": self.reason_code,
            "method": self.method,
        }


# --------------------------------------------------------------------------- sources


@dataclass
class _Source:
    id: str
    text: str
    relevance: float | None


def source_id(source: str | dict, index: int) -> str:
    """The id a source goes by in verdicts: its own, or ``source-<index>`` when it has none."""
    ident = source.get("id") if isinstance(source, dict) else None
    return str(ident) if ident not in (None, "") else f"source-{index}"


def _normalise_sources(sources: Sequence[str | dict] | None, limit: int) -> list[_Source]:
    out: list[_Source] = []
    for i, s in enumerate(sources or []):
        text: object
        sid: object
        if isinstance(s, str):
            text, sid, score = s, source_id(s, i), None
        elif isinstance(s, dict):
            text = s.get("text") if s.get("text") is not None else s.get("content", "")
            sid = source_id(s, i)
            score = s.get("score")
        else:
            continue
        if not isinstance(text, str) or not text.strip():
            continue
        try:
            rel = float(score) if score is not None else None
        except (TypeError, ValueError):
            rel = None
        out.append(_Source(str(sid), text, rel))
    # highest retrieval score first; unscored sources keep their order after scored ones
    ranked = sorted(enumerate(out), key=lambda p: (p[1].relevance is None, -(p[1].relevance or 0.0), p[0]))
    return [s for _, s in ranked][: max(1, int(limit))]


_CLAUSE_SPLIT_RE = re.compile(
    r";\s+|,\s+(?=(?:although|though|while|whereas|but|yet|however|except)\b)"
    r"|\s+(?=but\b)|\s+—\s+",
    re.I,
)


def _clauses(text: str) -> list[str]:
    """The text cut at its contrast markers, but not inside parentheses ("Margarethe Vogel (born
    1950 in Graz; died 2019 in Vienna) was an architect" is one clause about her)."""
    parts, start = [], 0
    for m in _CLAUSE_SPLIT_RE.finditer(text):
        if text.count("(", 0, m.start()) > text.count(")", 0, m.start()):
            continue
        parts.append(text[start : m.start()])
        start = m.end()
    parts.append(text[start:])
    return parts


@dataclass
class _Span:
    source: int
    sentence: str
    text: str
    clauses: tuple[int, ...] = ()  # for a multi-clause sentence: its clause span indices
    previous: str | None = None  # the sentence before, when this one opens with a pronoun


def _spans(sources: list[_Source]) -> list[_Span]:
    spans: list[_Span] = []
    for si, src in enumerate(sources):
        previous: str | None = None
        for sent in split_sentences(src.text):
            before, previous = previous, sent.text
            ctx = before if before is not None and refers_back(sent.text, before) else None
            parts = [p.strip() for p in _clauses(sent.text) if p.strip()]
            merged: list[str] = []
            for p in parts:
                if merged and len(p.split()) < 3:
                    merged[-1] = f"{merged[-1]} {p}"
                else:
                    merged.append(p)
            # a source's sentence that says two things of one subject gives each as a clause, as a
            # claim's does (conjuncts.py), so that a claim's part meets the part it speaks of
            merged = [q for p in merged for q in claim_parts(p)]
            if len(merged) <= 1:
                spans.append(_Span(si, sent.text, sent.text, previous=ctx))
                continue
            first = len(spans)
            for k, p in enumerate(merged):
                spans.append(_Span(si, sent.text, p, previous=ctx if k == 0 else None))
            spans.append(_Span(si, sent.text, sent.text, tuple(range(first, first + len(merged))), previous=ctx))
    return spans


# --------------------------------------------------------------------------- helpers


def _summary(claims: list[ClaimVerdict]) -> str:
    if not claims:
        return "No factual claims to verify"
    s = sum(1 for c in claims if c.verdict == SUPPORTED)
    c = sum(1 for c in claims if c.verdict == CONTRADICTED)
    u = sum(1 for c in claims if c.verdict == UNVERIFIABLE)
    text = f"{s}/{len(claims)} claims supported"
    if c:
        text += f", {c} contradicted"
    if u:
        text += f", {u} unverifiable"
    return text


def _finish(claims: list[ClaimVerdict], config: VerifierConfig, method: str) -> GroundingCheck:
    check = GroundingCheck(grounded=True, claims=claims, summary=_summary(claims), method=method)
    if check.contradicted_count:
        check.grounded = False
        check.reason_code = REASON_CONTRADICTION
    elif claims and check.unverifiable_ratio > config.max_unverifiable_ratio:
        check.grounded = False
        check.reason_code = REASON_UNVERIFIABLE
    return check


def _best_sentence_by_words(
    claim: Analysis, sentences: list[str], proper: frozenset[str]
) -> tuple[str, Alignment | None, Analysis | None]:
    """The sentence sharing most of the claim's wording (the NLI path has no embeddings)."""
    best, best_al, best_an, best_cov = "", None, None, -1.0
    for s in sentences:
        an = analyse(s, proper)
        al = align(claim, an)
        if al.coverage > best_cov:
            best, best_al, best_an, best_cov = s, al, an, al.coverage
    return best, best_al, best_an


# --------------------------------------------------------------------------- default path

#: How many sentences sharing most of a claim's content words join the embedding's candidates.
LEXICAL_CANDIDATES = 4


@dataclass
class _ClaimEvidence:
    claim: str
    candidates: list[Candidate]
    evidence: Evidence | None
    unchecked: bool = False  # its alignments did not fit the work budget (facts/work.py)


def _gather(
    claims: list[str], sources: list[_Source], config: VerifierConfig, embedder=None, cross_encoder=None
) -> tuple[list[_ClaimEvidence], list[_Span]]:
    """Candidates and evidence (with the combiner's features) for every claim of one call.
    ``cross_encoder`` replaces the packaged one (fitting the combiner on out-of-fold outputs:
    verifier_lab/crossfit.py). A claim whose alignments do not fit the call's work budget is marked
    unchecked; the claims after it get what is left."""
    work = _call_work.get()
    from .embedder import get_embedder

    emb = embedder or get_embedder(config.threads)
    spans = _spans(sources)
    proper = proper_vocabulary(list(claims) + [s.text for s in sources])
    unique: dict[str, int] = {}
    for t in list(claims) + [sp.text for sp in spans]:
        unique.setdefault(t, len(unique))
    vectors = emb.encode(list(unique))
    cv = vectors[[unique[c] for c in claims]]
    sv = vectors[[unique[sp.text] for sp in spans]] if spans else np.zeros((0, vectors.shape[1]))
    sims = cv @ sv.T if len(spans) else np.zeros((len(claims), 0))

    span_an = [analyse(sp.text, proper) for sp in spans]
    ctx_an = [analyse(sp.previous, proper) if sp.previous else None for sp in spans]
    sentences = [sp.sentence for sp in spans]
    previous = [sp.previous for sp in spans]
    sources_of = [sp.source for sp in spans]
    whole = [bool(sp.clauses) for sp in spans]
    # presence of a claim's facts is checked against all sources of the call together
    everything = analyse("\n".join(s.text for s in sources), proper)
    out: list[_ClaimEvidence] = []
    for ci, claim in enumerate(claims):
        c_an = analyse(claim, proper)
        if not spans:
            out.append(_ClaimEvidence(claim, [], None))
            continue
        order = [int(i) for i in np.argsort(-sims[ci])]
        pool = [
            si
            for rank, si in enumerate(order)
            if rank < CANDIDATES_PER_CLAIM and (rank == 0 or sims[ci, si] >= RELEVANCE_FLOOR)
        ]
        # sentences sharing the claim's words, which the embedding may rank low (a second
        # fact of the claim, stated in a sentence about something else)
        words = [w for _, w in c_an.content]
        lexical = sorted(
            ((sum(1 for w in words if span_an[i].states(w)), i) for i in range(len(spans))),
            key=lambda p: (-p[0], p[1]),
        )
        pool += [i for n, i in lexical[:LEXICAL_CANDIDATES] if n > 0 and i not in pool]
        try:
            candidates = _candidates(c_an, pool, spans, span_an, ctx_an, everything, sims[ci], work)
            evidence = build_evidence(
                c_an,
                candidates,
                sentences,
                previous,
                sources_of,
                everything,
                cv[ci],
                sv,
                RELEVANCE_FLOOR,
                whole,
                work=work,
            )
        except OverWork:
            out.append(_ClaimEvidence(claim, [], None, unchecked=True))
            continue
        out.append(_ClaimEvidence(claim, candidates, evidence))
    _cross_encode(out, sentences, previous, config, cross_encoder)
    return out, spans


def _candidates(c_an, pool, spans, span_an, ctx_an, everything, sims, work: Work | None) -> list[Candidate]:
    """The claim aligned with each sentence of its ``pool``; a whole sentence carries the conflicts
    of its clauses."""
    if work is not None:  # what its candidates cost at least, before any of them is aligned
        work.afford_alignments(c_an, [span_an[si] for si in pool], everything)
    candidates: list[Candidate] = []
    aligned: dict[int, Alignment] = {}
    for si in pool:
        sp = spans[si]
        if si not in aligned:
            aligned[si] = align(c_an, span_an[si], everything, context=ctx_an[si], work=work)
        al = aligned[si]
        if sp.clauses:
            extra: list[Conflict] = []
            for k in sp.clauses:
                if k not in aligned:
                    aligned[k] = align(c_an, span_an[k], everything, context=ctx_an[k], work=work)
                extra.extend(aligned[k].conflicts)
            al = replace(al, conflicts=al.conflicts + extra)
        candidates.append(Candidate(si, float(sims[si]), al))
    return settle_negations(candidates)


def _cross_encode(
    gathered: list[_ClaimEvidence],
    sentences: list[str],
    previous: list[str | None],
    config: VerifierConfig,
    model=None,
) -> None:
    """The packaged cross-encoder's probabilities on (evidence, claim), one batch for the call,
    added to each claim's combiner features (docs/verifier.md, "How a verdict is made")."""
    todo = [g for g in gathered if g.evidence is not None]
    if not todo:
        return
    # one pair per run: the packaged graph scales a run's activations together (dynamic int8), so
    # in a batch a claim's probabilities would move with the other claims of the answer
    model = model or get_nli_model(CROSS_ENCODER_DIR, config.threads, batch_size=1)
    scores = model.predict([(premise(g.evidence, sentences, previous), g.claim) for g in todo])  # type: ignore[arg-type]
    for g, sc in zip(todo, scores):
        features = g.evidence.features  # type: ignore[union-attr]
        features["nli_entailment"] = sc.entailment
        features["nli_contradiction"] = sc.contradiction
        features["nli_neutral"] = sc.neutral


def _verify_with_embeddings(
    claims: list[str], sources: list[_Source], config: VerifierConfig, embedder=None
) -> list[ClaimVerdict]:
    gathered, spans = _gather(claims, sources, config, embedder)
    combiner = get_combiner()
    return [_decide(g, spans, sources, config, combiner) for g in gathered]


def _span_match(span_index: int, score: float, spans: list[_Span], sources: list[_Source]) -> SourceMatch:
    sp = spans[span_index]
    src = sources[sp.source]
    return SourceMatch(src.id, src.text, round(score, 4), sp.sentence, src.relevance)


def _fact_text(f) -> str:
    if f.implied:
        return f"{f.describe()} ({f.text})"  # "64 year (1837 to 1901)"
    return f.text if f.kind == "entity" else f.describe()


def _stated_otherwise(ev: Evidence) -> bool:
    """Whether a date or a measured amount of the claim is missing from the sources while the
    evidence states another in its place, with enough shared context to count (docs/verifier.md,
    "How a verdict is made", step 5); for a date, one the sources give elsewhere, for another
    thing, counts too ("must accept or decline the offer by 16 April" against "offers … sent on
    16 April. Parents must accept or decline the offer by 30 April": the conflict keeps its weight
    only where the sentence about the claim gives its date with more of the claim's words)."""
    c = ev.conflict
    if (
        c is None
        or ev.conflict_span is None
        or c.kind not in ("number", "unit", "date")
        or c.confidence < BLOCKING_CONFLICT
        or ev.features.get("conflict_on_evidence") != 1.0
    ):
        return False
    if c.kind == "date" and c.claim not in {cf.describe() for cf, _ in ev.alignment.matched}:
        if not any(day in c.claim.lower() for day in WEEKDAY_NAMES):  # a weekday is no date of record
            return True
    # a bare count ("10 or 15 years", "30,000 scientists") is too often another number's rival
    return any(
        f.describe() == c.claim and (f.kind == "date" or f.dim not in ("", "count"))
        for f in ev.alignment.missing
        if not f.weak
    )


def _decide(
    g: _ClaimEvidence, spans: list[_Span], sources: list[_Source], config: VerifierConfig, combiner
) -> ClaimVerdict:
    claim, ev = g.claim, g.evidence
    if g.unchecked:
        return ClaimVerdict(claim, UNVERIFIABLE, 0.0, None, NOT_CHECKED)
    if ev is None or not g.candidates:
        return ClaimVerdict(claim, UNVERIFIABLE, 1.0, None, "no source text to compare with")
    probs = combiner.probabilities(ev.features)
    stated_otherwise = _stated_otherwise(ev)
    if stated_otherwise:
        # a value of the claim that no source has and the evidence states otherwise ("3 October
        # 1991" against "3 October 1990") cannot be supported, however close the wording: what
        # the combiner gave "supported" is shared by the other two as they stand
        rest = probs[CONTRADICTED] + probs[UNVERIFIABLE]
        if rest > 0:
            probs = {SUPPORTED: 0.0, CONTRADICTED: probs[CONTRADICTED] / rest, UNVERIFIABLE: probs[UNVERIFIABLE] / rest}
        else:  # the combiner was sure of "supported": nothing to share, so nothing is decided
            probs = {SUPPORTED: 0.0, CONTRADICTED: 0.0, UNVERIFIABLE: 1.0}
    p_sup, p_con, p_unv = probs[SUPPORTED], probs[CONTRADICTED], probs[UNVERIFIABLE]
    sims = {c.span_index: c.sim for c in g.candidates}
    used = [
        {"source_id": sources[spans[i].source].id, "span": spans[i].sentence, "similarity": round(sims[i], 4)}
        for i in ev.spans
    ]
    matched = list(
        dict.fromkeys(
            f"{_fact_text(cf)} = {_fact_text(sf)}" if _fact_text(cf) != _fact_text(sf) else _fact_text(cf)
            for cf, sf in ev.alignment.matched
        )
    )
    rounded = {k: round(v, 4) for k, v in probs.items()}
    top = max(g.candidates, key=lambda c: c.sim)
    conflict = ev.conflict
    # the combiner is undecided when supported or contradicted is likelier than unverifiable: only
    # then may the fact backstop decide (overriding a combiner that found "unverifiable" likeliest,
    # it was wrong 7 times in 8 on the fitting half and the looked halves; docs/verifier.md, step 6)
    undecided = max(p_sup, p_con) > p_unv
    inputs = {
        "path": "combiner",
        "on_meaning": True,  # a contradiction may stand without a fact conflict (below)
        "conflict": round(conflict.confidence, 4) if conflict is not None and ev.conflict_span is not None else None,
        "backstop": bool(
            config.fact_backstop
            and undecided
            and ev.features.get("rule_contradicted") == 1.0
            and ev.features.get("conflict_on_evidence") == 1.0
        ),
    }
    if p_con >= config.contradiction_threshold:
        if conflict is not None and ev.conflict_span is not None:
            named, why, kind = ev.conflict_span, conflict.reason, conflict.kind
        else:
            # sure of a contradiction that no single fact shows (a comparison reversed or a common
            # noun swapped in other words, which the cross-encoder reads): the evidence sentence
            # closest to the claim is the one named (docs/verifier.md, step 6)
            named = max(ev.spans, key=lambda i: sims[i]) if ev.spans else top.span_index
            why = f"contradiction {p_con:.2f}: the evidence says otherwise, though no single fact differs"
            kind = "meaning"
        return ClaimVerdict(
            claim,
            CONTRADICTED,
            p_con,
            _span_match(named, sims[named], spans, sources),
            why,
            kind=kind,
            evidence=used,
            matched=matched,
            failed=why,
            probabilities=rounded,
            features=ev.features,
            decided_by="combiner",
            thresholds_input=inputs,
        )
    if (
        inputs["backstop"]
        and p_sup < config.entailment_threshold
        and conflict is not None
        and ev.conflict_span is not None
        and conflict.confidence >= config.contradiction_threshold
    ):
        # the combiner is undecided, but the sentence about the claim's subject states another
        # value with enough shared context: the fact check decides, as on the NLI path
        return ClaimVerdict(
            claim,
            CONTRADICTED,
            conflict.confidence,
            _span_match(ev.conflict_span, sims[ev.conflict_span], spans, sources),
            conflict.reason,
            kind=conflict.kind,
            evidence=used,
            matched=matched,
            failed=conflict.reason,
            probabilities=rounded,
            features=ev.features,
            decided_by="fact_backstop",
            thresholds_input=inputs,
        )
    if p_sup >= config.entailment_threshold:
        n = len(ev.spans)
        why = f"covered by {n} source sentence{'s' if n != 1 else ''}"
        n_src = len({u["source_id"] for u in used})
        if n_src > 1:
            why += f" from {n_src} sources"
        if matched:
            why += f", {len(matched)} matching fact{'s' if len(matched) != 1 else ''}"
        why += f" (similarity {sims[ev.spans[0]]:.2f})"
        return ClaimVerdict(
            claim,
            SUPPORTED,
            p_sup,
            _span_match(ev.spans[0], sims[ev.spans[0]], spans, sources),
            why,
            evidence=used,
            matched=matched,
            probabilities=rounded,
            features=ev.features,
            decided_by="combiner",
            thresholds_input=inputs,
        )
    # unverifiable: say what is missing, or which doubtful conflict kept it from a verdict
    failed = None
    if top.sim < RELEVANCE_FLOOR:
        reason = f"no source sentence on the same topic (best similarity {top.sim:.2f})"
    elif ev.alignment.missing:
        names = ", ".join(dict.fromkeys(f"'{_fact_text(f)}'" for f in ev.alignment.missing))
        reason = f"not found in the sources: {names.replace(chr(39), '')}"
        failed = f"missing: {names}"
    elif conflict is not None and conflict.confidence >= BLOCKING_CONFLICT:
        reason = f"possible {conflict.reason}; too little shared context to call it a contradiction"
        failed = conflict.reason
    elif ev.alignment.uncovered and ev.alignment.coverage < 0.8:
        words = list(dict.fromkeys(ev.alignment.uncovered))
        reason = "source does not mention: " + ", ".join(words)
        failed = "missing: " + ", ".join(f"'{w}'" for w in words)
    else:
        reason = f"source sentences only loosely match (similarity {sims[ev.spans[0]]:.2f})"
    if p_sup < config.entailment_threshold and p_con < config.contradiction_threshold and undecided:
        reason += f" (undecided: supported {p_sup:.2f}, contradicted {p_con:.2f})"
    return ClaimVerdict(
        claim,
        UNVERIFIABLE,
        p_unv,
        _span_match(ev.spans[0], sims[ev.spans[0]], spans, sources),
        reason,
        evidence=used,
        matched=matched,
        failed=failed,
        probabilities=rounded,
        features=ev.features,
        decided_by="combiner",
        thresholds_input=inputs,
    )


# --------------------------------------------------------------------------- NLI path


def _verify_with_nli(
    claims: list[str], sources: list[_Source], config: VerifierConfig, work: Work | None = None
) -> list[ClaimVerdict]:
    model = get_nli_model(config.nli_model_dir, config.threads)  # type: ignore[arg-type]
    pairs = [(src.text, claim) for claim in claims for src in sources]
    scores = model.predict(pairs)
    proper = proper_vocabulary(list(claims) + [s.text for s in sources])
    sentences = [[s.text for s in split_sentences(src.text)] or [src.text] for src in sources]
    results: list[ClaimVerdict] = []
    n = len(sources)
    for ci, claim in enumerate(claims):
        row = scores[ci * n : (ci + 1) * n]
        best_e = max(range(n), key=lambda k: row[k].entailment)
        best_c = max(range(n), key=lambda k: row[k].contradiction)
        c_an = analyse(claim, proper)
        if work is not None:
            # the claim's alignments here, charged at most once up front: each source's sentences
            # (finding the span to show) and each source whole (the backstop) cost no more than
            # the claim against that source, twice
            try:
                work.charge(sum(2 * pairings(c_an, an, an) for an in (analyse(s.text, proper) for s in sources)))
            except OverWork:
                results.append(ClaimVerdict(claim, UNVERIFIABLE, 0.0, None, NOT_CHECKED))
                continue
        # What replay and calibration re-threshold (policies/judged.py): the best entailment and
        # contradiction; a backstop conflict is known only where the backstop ran.
        probs = {
            SUPPORTED: round(float(row[best_e].entailment), 4),
            CONTRADICTED: round(float(row[best_c].contradiction), 4),
        }
        inputs = {"path": "nli", "conflict": None, "backstop": bool(config.fact_backstop)}

        def match(k: int, score: float, c_an=c_an) -> SourceMatch:
            span, _, _ = _best_sentence_by_words(c_an, sentences[k], proper)
            return SourceMatch(sources[k].id, sources[k].text, score, span, sources[k].relevance)

        if row[best_e].entailment >= config.entailment_threshold:
            s = row[best_e]
            results.append(
                ClaimVerdict(
                    claim,
                    SUPPORTED,
                    s.entailment,
                    match(best_e, s.entailment),
                    f"entailment {s.entailment:.2f} (NLI)",
                    probabilities=probs,
                    thresholds_input=inputs,
                )
            )
            continue
        if row[best_c].contradiction >= config.contradiction_threshold:
            s = row[best_c]
            results.append(
                ClaimVerdict(
                    claim,
                    CONTRADICTED,
                    s.contradiction,
                    match(best_c, s.contradiction),
                    f"contradiction {s.contradiction:.2f} (NLI)",
                    kind="nli",
                    probabilities=probs,
                    thresholds_input=inputs,
                )
            )
            continue
        if config.fact_backstop:
            backstop = None
            for k in sorted(range(n), key=lambda k: -row[k].entailment):
                span, _, span_an = _best_sentence_by_words(c_an, sentences[k], proper)
                if span_an is None:
                    continue
                al = align(c_an, span_an, analyse(sources[k].text, proper))
                hard = [
                    c
                    for c in al.conflicts
                    if c.kind in ("number", "unit", "date", "time", "entity")
                    and c.confidence >= config.contradiction_threshold
                ]
                if hard:
                    conflict = max(hard, key=lambda c: c.confidence)
                    backstop = ClaimVerdict(
                        claim,
                        CONTRADICTED,
                        conflict.confidence,
                        SourceMatch(sources[k].id, sources[k].text, row[k].contradiction, span, sources[k].relevance),
                        f"fact check: {conflict.reason} (NLI undecided: entailment "
                        f"{row[k].entailment:.2f}, contradiction {row[k].contradiction:.2f})",
                        kind=conflict.kind,
                        probabilities=probs,
                        thresholds_input={**inputs, "conflict": round(conflict.confidence, 4)},
                    )
                    break
            if backstop is not None:
                results.append(backstop)
                continue
        s = row[best_e]
        results.append(
            ClaimVerdict(
                claim,
                UNVERIFIABLE,
                max(s.neutral, 1.0 - s.entailment - s.contradiction, 0.0),
                match(best_e, s.entailment),
                f"NLI undecided: entailment {s.entailment:.2f}, contradiction {row[best_c].contradiction:.2f}",
                probabilities=probs,
                thresholds_input=inputs,
            )
        )
    return results


# --------------------------------------------------------------------------- public API


def check_grounding(
    text: str,
    sources: Sequence[str | dict] | None,
    config: VerifierConfig | None = None,
    *,
    embedder=None,
    work: Work | None = None,
) -> GroundingCheck:
    """Check every factual claim of ``text`` against ``sources``.

    ``sources`` are strings (ids ``source-0``, ``source-1`` ...) or dicts
    ``{"id", "text", "score"?}``; the ``max_sources_per_claim`` highest-scored are used.
    No sources: a no-op result (``grounded`` true, ``reason_code`` ``GROUNDING_NO_SOURCES``).
    No claims (empty text, or only questions / greetings / code): ``grounded`` true, no claims.
    With ``work`` (facts/work.py), a claim whose alignments do not fit it is ``unverifiable`` with
    the reason ``NOT_CHECKED``; without, the work is unbounded.
    """
    config = config or VerifierConfig()
    method = "nli" if config.nli_model_dir else "embedding+facts"
    srcs = _normalise_sources(sources, config.max_sources_per_claim)
    if not srcs:
        return GroundingCheck(
            grounded=True,
            claims=[],
            summary="No sources to verify against",
            reason_code=REASON_NO_SOURCES,
            method=method,
        )
    claims = extract_claims(text or "")
    if not claims:
        return GroundingCheck(grounded=True, claims=[], summary=_summary([]), method=method)
    parts = [claim_parts(c) for c in claims]
    flat = [p for ps in parts for p in ps]
    if config.nli_model_dir:
        verdicts = _verify_with_nli(flat, srcs, config, work)
    else:
        token = _call_work.set(work)
        try:
            verdicts = _verify_with_embeddings(flat, srcs, config, embedder=embedder)
        finally:
            _call_work.reset(token)
    folded: list[ClaimVerdict] = []
    for claim, ps in zip(claims, parts):
        own, verdicts = verdicts[: len(ps)], verdicts[len(ps) :]
        folded.append(own[0] if len(own) == 1 else _fold(claim, own))
    return _finish(folded, config, method)


_WORST_FIRST = {CONTRADICTED: 0, UNVERIFIABLE: 1, SUPPORTED: 2}


def _fold(claim: str, parts: list[ClaimVerdict]) -> ClaimVerdict:
    """One verdict for a claim checked in parts (conjuncts.py): the verdict of its weakest part —
    a contradicted part (the most confident), else an unverifiable one, else the supported part
    least likely supported — with the evidence and matched facts of every part. A stricter
    entailment threshold fails the least supported part first, so the folded probabilities stay
    what re-deciding under other thresholds reads."""

    def weakness(v: ClaimVerdict) -> tuple[int, float]:
        if v.verdict == CONTRADICTED:
            return (0, -v.confidence)
        supported = v.probabilities[SUPPORTED] if v.probabilities else v.confidence
        return (_WORST_FIRST.get(v.verdict, 1), supported)

    worst = min(parts, key=weakness)
    spans: dict[tuple[str, str], dict] = {}
    for v in parts:
        for e in v.evidence:  # a sentence two parts rest on is named once, at its best similarity
            key = (e["source_id"], e["span"])
            if key not in spans or e["similarity"] > spans[key]["similarity"]:
                spans[key] = e
    matched = list(dict.fromkeys(m for v in parts for m in v.matched))
    # a supported claim names what holds each part; otherwise the part that failed says why
    reason = "; ".join(v.reason for v in parts) if worst.verdict == SUPPORTED else worst.reason
    return replace(worst, claim=claim, reason=reason, evidence=list(spans.values()), matched=matched)


def find_contradictions(
    claims: list[str], config: VerifierConfig | None = None, *, embedder=None, work: Work | None = None
) -> list[tuple[str, str, str]]:
    """Pairs of claims of one answer that state conflicting facts about the same thing.

    Two claims are compared when they are similar (cosine ≥ 0.5) or share a name; a pair
    is reported, as ``(claim_a, claim_b, reason)``, when a conflict between them reaches
    ``contradiction_threshold`` in either direction. With ``work``, the comparing stops at the first
    pair that does not fit it (``work.refused`` says so), with the pairs found until then.
    """
    from .embedder import get_embedder

    config = config or VerifierConfig()
    claims = [c for c in claims if c and c.strip()]
    if len(claims) < 2:
        return []
    emb = embedder or get_embedder(config.threads)
    vectors = emb.encode(claims)
    sims = vectors @ vectors.T
    proper = proper_vocabulary(claims)
    an = [analyse(c, proper) for c in claims]
    names = [{str(f.value) for f in a.facts if f.kind == "entity"} for a in an]
    out: list[tuple[str, str, str]] = []
    for i in range(len(claims)):
        for j in range(i + 1, len(claims)):
            if sims[i, j] < 0.5 and not (names[i] & names[j]):
                continue
            try:
                conflicts = align(an[i], an[j], work=work).conflicts + align(an[j], an[i], work=work).conflicts
            except OverWork:
                return out
            conflicts = [c for c in conflicts if c.confidence >= config.contradiction_threshold]
            if conflicts:
                best = max(conflicts, key=lambda c: c.confidence)
                reason = (
                    best.reason.replace("claim says", "one claim says")
                    .replace("source says", "another says")
                    .replace("claim has", "one claim has")
                    .replace("source has", "another has")
                )
                out.append((claims[i], claims[j], reason))
    return out
