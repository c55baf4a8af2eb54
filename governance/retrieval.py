"""What a run actually retrieved (docs/retrieval-provenance.md), so citations resolve against it (docs/citations.md).

A ``retrieval`` span may carry a provenance record in ``attributes.provenance`` (validated by
``governance.api.evidence``). Its results are sources the run reported, like a grounding report's
``sources``:

- a grounding report may name a source by id alone (``{"id": "chunk_42"}``): its text is taken
  from the latest retrieval result with that ``source_id`` when the report is recorded, and the
  stored source says which span it came from (``span_id``);
- the citation checks resolve cited ids against the report sources and every retrieval result.

The spans are read only when something needs them, so a run that uses neither costs no query.
"""

from collections.abc import Iterable, Sequence

from policies.engine import PolicySpec

from .models import Span


def _results(provenance) -> Iterable[dict]:
    if not isinstance(provenance, dict):
        return
    by_source = provenance.get("results_by_source")
    if isinstance(by_source, dict):
        for results in by_source.values():
            if isinstance(results, list):
                yield from (r for r in results if isinstance(r, dict))
    flat = provenance.get("results")
    if isinstance(flat, list):
        yield from (r for r in flat if isinstance(r, dict))


def _span_sources(span_id, attributes) -> list[dict]:
    sources = []
    for result in _results((attributes or {}).get("provenance")):
        ident, text = result.get("source_id"), result.get("text")
        if isinstance(ident, str) and ident and isinstance(text, str):
            sources.append({"id": ident, "text": text, "span_id": span_id})
    return sources


def retrieved_sources(*, tenant, run_id) -> list[dict]:
    """Every retrieval result of the run, oldest span first, as ``{"id", "text", "span_id"}``."""
    rows = (
        Span.objects.filter(tenant=tenant, run_id=run_id, kind=Span.Kind.RETRIEVAL)
        .order_by("id")
        .values_list("id", "attributes")
    )
    return [source for span_id, attributes in rows for source in _span_sources(span_id, attributes)]


def retrieved_sources_of_runs(*, tenant_id: int, run_ids) -> dict[int, list[tuple]]:
    """{run id: [(recorded at, source), ...]} for many runs at once (replay), oldest span first,
    each source as ``retrieved_sources`` gives it; runs without retrieval results are left out."""
    rows = (
        Span.objects.filter(tenant_id=tenant_id, run_id__in=run_ids, kind=Span.Kind.RETRIEVAL)
        .order_by("run_id", "id")
        .values_list("run_id", "id", "created_at", "attributes")
    )
    found: dict[int, list[tuple]] = {}
    for run_id, span_id, created_at, attributes in rows:
        for source in _span_sources(span_id, attributes):
            found.setdefault(run_id, []).append((created_at, source))
    return found


def is_reference(source: dict) -> bool:
    return not source.get("text")


def resolve_references(sources: Sequence[dict], retrieved: Sequence[dict]) -> list[dict]:
    """``sources`` with each id-only source given the text of the latest result of that id."""
    latest = {r["id"]: r for r in retrieved}
    resolved = []
    for source in sources:
        hit = latest.get(source.get("id")) if is_reference(source) else None
        resolved.append({**source, "text": hit["text"], "span_id": hit["span_id"]} if hit else source)
    return resolved


def citations_need_sources(specs: Sequence[PolicySpec], citations: Sequence) -> bool:
    """Whether checking these citations may need the sources they cite, reported or retrieved
    (see policies/categories/citations.py): only quotes and `citations_must_resolve` read them."""
    if not citations:
        return False
    grounding = [s for s in specs if s.category == "grounding"]
    if not grounding:
        return False
    if any(s.rules.get("citations_must_resolve") for s in grounding):
        return True
    return any(isinstance(c, dict) and c.get("quote") for c in citations)
