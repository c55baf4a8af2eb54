"""A retrieval span's provenance record (docs/retrieval-provenance.md): queries, and results grouped by source, each
marked as cited in the answer and as below the relevance floor.

The floor is each applicable policy's `score_relevance_floor`, read from the rules its
before_workflow evaluation stored. With several policies every distinct floor is kept: a result is
marked once per floor it falls under, naming the policies that set it, and each floor is a tick
on the relevance bars. So the strictest floor is always visible, and a lenient policy does not
hide it. "Cited" means the result's source_id is among the run's citations (plain strings, or
the source_id of {source_id, quote}); a citation of it that failed a check is named too.
"""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..models import Evaluation
from .evidence import (
    _citation_failures,
    _is_number,
    _list_of_dicts,
    _number,
    _text_of,
    citation_parts,
)

MAX_SHOWN_RESULTS = 100


@dataclass
class RetrievedResult:
    source_id: str
    source_type: str
    relevance: float | None
    text: str
    metadata: dict
    cited: bool = False
    quoted: bool = False
    citation_problems: list[str] = field(default_factory=list)
    below: list[tuple[float, list[str]]] = field(default_factory=list)  # (floor, policies) it falls under

    @property
    def percent(self) -> float:
        return max(0.0, min(100.0, self.relevance * 100)) if self.relevance is not None else 0.0


@dataclass
class RetrievedGroup:
    name: str
    results: list[RetrievedResult]
    hidden: int = 0  # results beyond MAX_SHOWN_RESULTS

    @property
    def count(self) -> int:
        return len(self.results) + self.hidden


@dataclass
class Retrieval:
    queries: list[str]
    scope: str
    mode: str
    filters: dict
    groups: list[RetrievedGroup]
    floors: list[tuple[float, list[str]]]  # distinct floors, strictest first, with their policies
    total_results: int | None = None
    deduplicated_to: int | None = None
    retrieval_time_ms: float | None = None
    intent_resolution_time_ms: float | None = None

    def _shown(self):
        return (r for g in self.groups for r in g.results)

    @property
    def result_count(self) -> int:
        return sum(g.count for g in self.groups)

    @property
    def cited_count(self) -> int:
        return sum(1 for r in self._shown() if r.cited)

    @property
    def below_count(self) -> int:
        return sum(1 for r in self._shown() if r.below)

    @property
    def floor_ticks(self) -> list[tuple[float, str]]:
        return [(floor, ", ".join(policies)) for floor, policies in self.floors]


def _relevance_floors(rules: dict[str, dict]) -> list[tuple[float, list[str]]]:
    floors: dict[float, list[str]] = defaultdict(list)
    for policy, r in rules.items():
        floor = r.get("score_relevance_floor")
        if _is_number(floor):
            floors[floor].append(policy)
    return sorted(floors.items(), key=lambda item: -item[0])


def _cited(citations) -> tuple[set[str], set[str]]:
    """(ids cited at all, ids cited with a quote) among the run's citations."""
    ids, quoted = set(), set()
    for c in citations if isinstance(citations, list) else ():
        ident, quote = citation_parts(c)
        if ident:
            ids.add(ident)
            if quote:
                quoted.add(ident)
    return ids, quoted


def _citation_problems(evaluations: Iterable[Evaluation]) -> dict[str, list[str]]:
    problems: dict[str, list[str]] = defaultdict(list)
    for e in evaluations:
        failures = _citation_failures(e.metadata) if isinstance(e.metadata, dict) else None
        for f in failures.items if failures else ():
            if f.label not in problems[f.source_id]:
                problems[f.source_id].append(f.label)
    return problems


def _result(raw: dict, *, cited, quoted, problems, floors) -> RetrievedResult | None:
    ident = raw.get("source_id")
    if not isinstance(ident, str):
        return None
    relevance = _number(raw.get("relevance"))
    text = raw.get("text") if isinstance(raw.get("text"), str) else _text_of(raw.get("text_preview"))
    metadata = raw.get("metadata")
    return RetrievedResult(
        source_id=ident,
        source_type=_text_of(raw.get("source_type")),
        relevance=relevance,
        text=text,
        metadata=metadata if isinstance(metadata, dict) else {},
        cited=ident in cited,
        quoted=ident in quoted,
        citation_problems=problems.get(ident, []),
        below=[(floor, names) for floor, names in floors if relevance is not None and relevance < floor],
    )


def retrieval_view(
    provenance, *, citations=(), rules: dict[str, dict] | None = None, problems: dict[str, list[str]] | None = None
) -> Retrieval | None:
    """A provenance record as the Trace tab shows it; None when it is not a record at all."""
    if not isinstance(provenance, dict):
        return None
    intent = provenance.get("intent") if isinstance(provenance.get("intent"), dict) else {}
    by_source = provenance.get("results_by_source")
    grouped: list[tuple[str, list[dict]]] = []
    if isinstance(by_source, dict):
        # Sorted by name: PostgreSQL's jsonb does not keep an object's key order, SQLite does.
        grouped = sorted((str(name), _list_of_dicts(results)) for name, results in by_source.items())
    if not any(results for _, results in grouped):
        # Only the flat merged list: group it by each result's own source_name.
        flat: dict[str, list[dict]] = defaultdict(list)
        for r in _list_of_dicts(provenance.get("results")):
            flat[_text_of(r.get("source_name")) or "results"].append(r)
        grouped = grouped if not flat else list(flat.items())
    cited, quoted = _cited(list(citations) if citations else [])
    floors = _relevance_floors(rules or {})
    groups = []
    for name, raws in grouped:
        results = [
            r
            for r in (
                _result(raw, cited=cited, quoted=quoted, problems=problems or {}, floors=floors)
                for raw in raws[:MAX_SHOWN_RESULTS]
            )
            if r
        ]
        groups.append(RetrievedGroup(name=name, results=results, hidden=max(0, len(raws) - MAX_SHOWN_RESULTS)))
    queries = intent.get("text_queries")
    filters = intent.get("filters")

    def count(key):
        value = provenance.get(key)
        return int(value) if _is_number(value) else None

    return Retrieval(
        queries=[q for q in queries if isinstance(q, str)] if isinstance(queries, list) else [],
        scope=_text_of(intent.get("scope")),
        mode=_text_of(intent.get("mode")),
        filters=filters if isinstance(filters, dict) else {},
        groups=groups,
        floors=floors,
        total_results=count("total_results"),
        deduplicated_to=count("deduplicated_to"),
        retrieval_time_ms=_number(provenance.get("retrieval_time_ms")),
        intent_resolution_time_ms=_number(provenance.get("intent_resolution_time_ms")),
    )
