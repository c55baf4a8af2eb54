"""What a reviewer sees of the verifier, the citation contract and retrieval provenance (issues 4 and 5):
the Governance tab's per-claim verdicts with their best source span and the failed citations with the
source text they were checked against; the Trace tab's retrieval results grouped by source, with
relevance bars, cited and below-floor markers; object citations everywhere citations are listed.

The runs are made through the API, as an agent makes them, so the pages show what the backend stores.
"""

import re

import pytest
from api_support import complete, create_policy, ground, post_json, start_run
from django.utils.html import escape
from django_scopes import scopes_disabled
from pages_support import signed_in

from governance import services
from governance.models import Decision, Evaluation, Run, Span
from policies.categories import CATEGORIES
from policies.pages.forms import OTHER_GROUP, rule_group
from policies.templates_catalog import TEMPLATES, template_for

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}

FED = "In March 2023 the Federal Reserve raised its benchmark rate by 25 basis points. The vote was unanimous."
IMF = "The IMF expects global growth of 3.0% in 2023."
NEWS = "Markets rallied after the central bank decision in March 2023."
PROVENANCE = {
    "intent": {
        "text_queries": ["fed rate decision march 2023", "imf growth forecast"],
        "scope": "focused",
        "filters": {"year": 2023},
    },
    "results_by_source": {
        "knowledge_base": [
            {
                "source_id": "fed-2023",
                "source_type": "vector_kb",
                "relevance": 0.92,
                "text": FED,
                "metadata": {"heading_path": "Rates > 2023"},
            },
            {"source_id": "imf-9", "source_type": "vector_kb", "relevance": 0.35, "text": IMF},
        ],
        "web_search": [
            {"source_id": "news-1", "source_type": "web", "relevance": 0.61, "text": NEWS},
        ],
    },
    "total_results": 9,
    "deduplicated_to": 3,
    "retrieval_time_ms": 45.2,
    "intent_resolution_time_ms": 120.5,
}
RULES = {
    "nli_check": True,
    "nli_phase": "both",
    "contradiction_action": "block",
    "citation_quotes": "required",
    "citations_must_resolve": True,
    "score_relevance_floor": 0.5,
    "min_citations": 1,
}
OUTPUT = (
    "The Federal Reserve raised its benchmark rate by 50 basis points in March 2023. "
    "The IMF expects global growth of 3.0% in 2023."
)
BAD_QUOTE = "raised its benchmark rate by 50 basis points"
CITATIONS = [
    {"source_id": "fed-2023", "quote": BAD_QUOTE},
    "imf-9",
    {"source_id": "ghost-7", "quote": "never retrieved"},
]


def _retrieve(api, run_id, provenance=PROVENANCE, name="kb-search"):
    response = post_json(
        api,
        f"/api/v1/runs/{run_id}/spans/",
        {"kind": "retrieval", "name": name, "attributes": {"provenance": provenance}},
    )
    assert response.status_code == 201, response.content
    return response.json()["id"]


@pytest.fixture
def evidence_run(api, acme):
    """A blocked run: retrieval, a report whose first claim contradicts its source and whose
    citations fail all three ways, then completion. Returns (run_id, span_id)."""
    create_policy(api, name="Verified Research", rules=RULES)
    run_id = start_run(api)
    span_id = _retrieve(api, run_id)
    response = ground(
        api,
        run_id,
        grounding_scores=[0.92, 0.35],
        output=OUTPUT,
        citations=CITATIONS,
        sources=[{"id": "fed-2023"}, {"id": "imf-9"}],
    )
    assert response.status_code == 200, response.content
    assert response.json()["decision"]["action"] == "block"
    complete(api, run_id, output=OUTPUT)
    return run_id, span_id


def _section(html: str, start: str, end: str | None = None) -> str:
    begin = html.index(start)
    return html[begin : html.index(end, begin) if end else None]


def _span(html: str, span_id: int) -> str:
    """One span of the timeline, up to the next item."""
    begin = html.index(f'id="span-{span_id}"')
    following = html.find('<li class="gr-tl ', begin)
    return html[begin : following if following >= 0 else None]


# -- Governance tab -----------------------------------------------------------------------------------


def test_governance_shows_each_claim_with_its_verdict_and_best_source_span(alice, evidence_run):
    run_id, _ = evidence_run
    html = signed_in(alice).get(f"/runs/{run_id}/").content.decode()

    table = _section(html, '<table class="gr-table gr-table--compact gr-claims-table">', "</table>")
    headers = re.findall(r'<th scope="col"[^>]*>([^<]+)</th>', table)
    assert headers == ["#", "Claim", "Verdict", "Best source span", "Why"]
    rows = re.findall(r'<tr class="gr-claim gr-claim--(\w+)">(.*?)</tr>', table, re.S)
    assert [verdict for verdict, _ in rows] == ["contradicted", "supported"]
    failed = rows[0][1]
    assert "The Federal Reserve raised its benchmark rate by 50 basis points in March 2023." in failed
    assert '<span class="badge badge-contradicted">contradicted</span>' in failed
    # The source sentence it was judged against, the source it came from, and why it failed.
    assert "<code>fed-2023</code>" in failed
    assert (
        '<blockquote class="gr-span">In March 2023 the Federal Reserve raised its benchmark rate by 25 basis '
        "points.</blockquote>"
    ) in failed
    assert "number mismatch" in failed and '<span class="gr-tag">number</span>' in failed
    # The whole source, with the span marked in it.
    assert (
        "<mark>In March 2023 the Federal Reserve raised its benchmark rate by 25 basis points.</mark> The vote"
        in failed
    )
    assert '<span class="badge badge-supported">supported</span>' in rows[1][1]
    # The counts head the table.
    assert '<span class="badge badge-contradicted">1 contradicted</span>' in html
    assert '<span class="badge badge-supported">1 supported</span>' in html
    # The raw metadata is still there, folded away.
    assert '<details class="gr-raw"><summary>Raw metadata</summary>' in html


def test_governance_shows_which_citation_failed_and_the_source_text_it_was_checked_against(alice, evidence_run):
    run_id, _ = evidence_run
    html = signed_in(alice).get(f"/runs/{run_id}/?tab=governance").content.decode()

    table = _section(html, '<table class="gr-table gr-table--compact gr-citations-table">', "</table>")
    headers = re.findall(r'<th scope="col"[^>]*>([^<]+)</th>', table)
    assert headers == ["Citation", "Problem", "Source text it was checked against"]
    rows = dict(re.findall(r'<tr class="gr-citefail gr-citefail--([\w-]+)">(.*?)</tr>', table, re.S))
    assert set(rows) == {"quote_not_found", "missing_quote", "unresolved"}
    quote = rows["quote_not_found"]
    assert '<code class="gr-cite-id">fed-2023</code>' in quote
    assert f'<q class="gr-quote">{BAD_QUOTE}</q>' in quote
    assert "Quote not found in the source" in quote
    assert f'<div class="gr-text-box gr-source-checked">{FED}</div>' in quote
    assert (
        "ghost-7" in rows["unresolved"] and "no source or retrieval result of the run has this id" in rows["unresolved"]
    )
    assert "imf-9" in rows["missing_quote"] and "No quote (the policy requires one)" in rows["missing_quote"]
    # Both phases checked the citations: the mid_execution report's and the run's at completion.
    assert html.count('class="gr-table gr-table--compact gr-citations-table"') == 2


def test_self_contradiction_shows_both_claims(alice, acme, api):
    create_policy(
        api,
        name="Self-consistent answers",
        rules={"factual_consistency_check": True, "min_citations": 0, "action_on_violation": "block"},
    )
    run_id = start_run(api)
    output = (
        "The Federal Reserve raised its benchmark rate by 25 basis points in March 2023. "
        "The Federal Reserve raised its benchmark rate by 50 basis points in March 2023."
    )
    ground(api, run_id, grounding_scores=[0.9], output=output)
    assert complete(api, run_id, output=output).json()["decision"]["action"] == "block"

    html = signed_in(alice).get(f"/runs/{run_id}/").content.decode()
    table = _section(html, '<table class="gr-table gr-table--compact gr-contradictions-table">', "</table>")
    assert re.findall(r'<th scope="col"[^>]*>([^<]+)</th>', table) == ["Claim", "Contradicted by", "Why"]
    assert "by 25 basis points in March 2023." in table and "by 50 basis points in March 2023." in table
    assert "number mismatch" in table
    assert "2 claims of the final output compared with each other." in html


def test_violation_page_shows_the_same_details(alice, evidence_run):
    run_id, _ = evidence_run
    with scopes_disabled():
        verifier = Evaluation.objects.filter(run_id=run_id, source="verifier", phase="after_workflow").get()
        engine = Evaluation.objects.filter(run_id=run_id, source="engine", phase="after_workflow").get()
    client = signed_in(alice)

    html = client.get(f"/violations/{verifier.pk}/").content.decode()
    assert '<h2 id="checked-title">What failed</h2>' in html
    assert '<tr class="gr-claim gr-claim--contradicted">' in html
    assert '<blockquote class="gr-span">In March 2023 the Federal Reserve' in html
    # The run's citations as reported: ids, and quotes of the object citations.
    assert f'<code class="gr-cite-id">fed-2023</code> <q class="gr-quote">{BAD_QUOTE}</q>' in html
    assert '<li><code class="gr-cite-id">imf-9</code></li>' in html

    html = client.get(f"/violations/{engine.pk}/").content.decode()
    assert "gr-citations-table" in html and f'<div class="gr-text-box gr-source-checked">{FED}</div>' in html


def test_violation_page_of_a_mid_execution_report_shows_its_object_citations_and_source_spans(alice, evidence_run):
    run_id, span_id = evidence_run
    with scopes_disabled():
        mid = Evaluation.objects.filter(run_id=run_id, source="engine", phase="mid_execution").get()
    html = signed_in(alice).get(f"/violations/{mid.pk}/").content.decode()
    assert '<code class="gr-cite-id">ghost-7</code> <q class="gr-quote">never retrieved</q>' in html
    # The report's sources were sent by id and resolved from the retrieval span.
    assert f'href="/runs/{run_id}/?tab=trace#span-{span_id}">text from retrieval span #{span_id}</a>' in html


# -- Trace tab ------------------------------------------------------------------------------------------


def test_trace_shows_retrieval_queries_and_results_grouped_by_source(alice, evidence_run):
    run_id, span_id = evidence_run
    html = signed_in(alice).get(f"/runs/{run_id}/?tab=trace").content.decode()

    span = _span(html, span_id)
    assert '<div class="gr-retrieval">' in span
    assert "<q>fed rate decision march 2023</q>" in span and "<q>imf growth forecast</q>" in span
    assert "focused" in span and "<dt>year</dt>" in span  # scope and filters
    assert "3 from 2 sources" in span and "9 found, 3 after deduplication" in span
    assert "45 ms retrieval" in span and "120 ms intent resolution" in span
    captions = re.findall(
        r'<caption><span class="gr-results-source">([^<]+)</span> <span class="gr-count">(\d+)</span>', span
    )
    assert captions == [("knowledge_base", "2"), ("web_search", "1")]
    for table in re.findall(r'<table class="gr-table gr-table--compact gr-results-table">.*?</table>', span, re.S):
        headers = re.findall(r'<th scope="col"[^>]*>([^<]+)</th>', table)
        assert headers == ["Result", "Relevance", "In the answer"]
    # The provenance is not repeated as raw JSON under Details.
    assert "results_by_source" not in span


def _result_rows(html: str, span_id: int) -> dict[str, str]:
    span = _span(html, span_id)
    rows = re.findall(r'<tr class="gr-result[^"]*">(.*?)</tr>', span, re.S)
    return {re.search(r"<code>([^<]+)</code>", row).group(1): row for row in rows}


def test_trace_marks_relevance_bars_cited_results_and_results_below_the_floor(alice, evidence_run):
    run_id, span_id = evidence_run
    html = signed_in(alice).get(f"/runs/{run_id}/?tab=trace").content.decode()
    rows = _result_rows(html, span_id)
    assert set(rows) == {"fed-2023", "imf-9", "news-1"}

    fed, imf, news = rows["fed-2023"], rows["imf-9"], rows["news-1"]
    # Relevance as a number and as a bar, with the policy's floor as a tick on it.
    assert '<span class="gr-rel-value">0.92</span>' in fed and 'style="width: 92.0%"' in fed
    assert 'class="gr-meter-tick" style="left: 50.0%" title="Relevance floor 0.5 (Verified Research)"' in fed
    assert '<span class="gr-meter gr-rel-meter" aria-hidden="true">' in fed  # the number carries the value
    # Cited in the answer (with a quote), and the citation's failure named.
    assert '<span class="gr-flag gr-flag--cited">cited with a quote</span>' in fed
    assert "Quote not found in the source" in fed
    assert "below floor" not in fed
    # Cited without a quote, and under the 0.5 floor.
    assert '<span class="gr-flag gr-flag--cited">cited</span>' in imf
    assert "No quote (the policy requires one)" in imf
    assert "below floor 0.5" in imf and 'style="width: 35.0%"' in imf
    # Retrieved but not used.
    assert '<span class="gr-muted">not cited</span>' in news and "below floor" not in news
    assert re.search(r'<tr class="gr-result gr-result--cited gr-result--below">', html)

    span = _span(html, span_id)
    assert "<strong>2</strong> cited" in span and "<strong>1</strong> below the relevance floor" in span
    assert '0.5 <span class="gr-muted">(Verified Research)</span>' in span


def test_trace_shows_every_distinct_floor_of_the_applicable_policies(alice, acme, api):
    create_policy(api, name="Lenient RAG", rules={"score_relevance_floor": 0.3, "min_citations": 0})
    create_policy(api, name="Strict RAG", rules={"score_relevance_floor": 0.7, "min_citations": 0})
    create_policy(api, name="No floor", rules={"min_citations": 0})
    create_policy(api, name="Other agent", rules={"score_relevance_floor": 0.99}, agents=["someone-else"])
    run_id = start_run(api)
    span_id = _retrieve(api, run_id)
    html = signed_in(alice).get(f"/runs/{run_id}/?tab=trace").content.decode()
    rows = _result_rows(html, span_id)

    assert "below floor" not in rows["fed-2023"]  # 0.92
    assert "below floor 0.7" in rows["news-1"] and "below floor 0.3" not in rows["news-1"]  # 0.61
    assert "below floor 0.7" in rows["imf-9"] and "below floor 0.3" not in rows["imf-9"]  # 0.35
    assert "(Strict RAG)" in rows["imf-9"]  # several floors: each marker names its policy
    ticks = re.findall(r'title="Relevance floor ([\d.]+) \(([^)]+)\)"', rows["fed-2023"])
    assert ticks == [("0.7", "Strict RAG"), ("0.3", "Lenient RAG")]  # not the policy of another agent
    # the other agent's floor appears nowhere: no marker, tick or summary names it (a bare "0.99"
    # also matched the page's timestamps, e.g. "…:20.990418")
    assert not re.search(r"floor 0\.99\b", html) and "(Other agent)" not in html


def test_trace_shows_verifier_verdicts_under_the_report_and_the_final_decision(alice, evidence_run):
    run_id, _ = evidence_run
    html = signed_in(alice).get(f"/runs/{run_id}/?tab=trace").content.decode()

    report = _section(html, 'id="report-1"', '<li class="gr-tl gr-tl--decision">')
    assert '<details class="gr-tl-details gr-tl-evidence" open>' in report  # it blocked: shown open
    assert '<tr class="gr-claim gr-claim--contradicted">' in report
    assert '<blockquote class="gr-span">In March 2023 the Federal Reserve' in report
    assert "gr-citations-table" in report
    assert re.search(r'<h4 class="gr-ev-title">Claims checked against the sources', report)
    final = html[html.rindex("<code>after_workflow</code>") :]
    assert '<tr class="gr-claim gr-claim--contradicted">' in final and "gr-citations-table" in final
    # Object citations in the report block.
    assert f'<code class="gr-cite-id">fed-2023</code> <q class="gr-quote">{BAD_QUOTE}</q>' in report
    assert '<li><code class="gr-cite-id">imf-9</code></li>' in report


def test_trace_tab_over_htmx_is_the_fragment_with_the_retrieval(alice, evidence_run):
    run_id, span_id = evidence_run
    client = signed_in(alice)
    fragment = client.get(f"/runs/{run_id}/?tab=trace", **HX)
    body = fragment.content.decode()
    assert body.strip().startswith('<div id="run-tabs"') and "<html" not in body
    assert f'id="span-{span_id}"' in body and "gr-results-table" in body
    assert "HX-Request" in fragment["Vary"]
    full = client.get(f"/runs/{run_id}/?tab=trace").content.decode()
    assert "<html" in full and "gr-results-table" in full
    governance = client.get(f"/runs/{run_id}/?tab=governance", **HX).content.decode()
    assert governance.strip().startswith('<div id="run-tabs"') and "gr-claims-table" in governance


# -- Untrusted and odd data -----------------------------------------------------------------------------

XSS = '<script>alert("x")</script>'


def test_agent_data_is_escaped_everywhere_it_is_shown(alice, acme, api):
    create_policy(
        api, name="Verified Research", rules={**RULES, "citations_must_resolve": False, "citation_quotes": "off"}
    )
    run_id = start_run(api)
    hostile = {
        "intent": {"text_queries": [XSS], "scope": XSS, "filters": {XSS: XSS}},
        "results_by_source": {
            XSS: [{"source_id": XSS, "source_type": XSS, "relevance": 0.2, "text": XSS, "metadata": {XSS: XSS}}]
        },
    }
    _retrieve(api, run_id, hostile, name=XSS)
    ground(
        api,
        run_id,
        grounding_scores=[0.9],
        output=f"The rate rose by 50 points in 2023. {XSS}",
        citations=[{"source_id": XSS, "quote": XSS}],
        sources=[{"id": XSS, "text": f"The rate rose by 25 points in 2023. {XSS}"}],
    )
    complete(api, run_id)
    with scopes_disabled():
        run = Run.objects.get(pk=run_id)
        Evaluation.objects.create(
            tenant=acme,
            run=run,
            decision=Decision.objects.filter(run=run, phase="after_workflow").get(),
            policy_name=XSS,
            category="grounding",
            agent_name=run.agent_name,
            phase="after_workflow",
            action="warn",
            reason=XSS,
            source="verifier",
            metadata={
                "verification": {
                    "claims": [
                        {
                            "claim": XSS,
                            "verdict": "contradicted",
                            "reason": XSS,
                            "kind": XSS,
                            "best_source": {"id": XSS, "span": XSS, "content": f"a {XSS} b"},
                        }
                    ]
                },
                "citation_failures": [
                    {"citation": {"source_id": XSS, "quote": XSS}, "problem": XSS, "source_id": XSS, "source_text": XSS}
                ],
                "check": "consistency",
                "contradictions": [{"claim_a": XSS, "claim_b": XSS, "reason": XSS}],
            },
        )
    client = signed_in(alice)
    for path in (f"/runs/{run_id}/", f"/runs/{run_id}/?tab=trace"):
        html = client.get(path).content.decode()
        assert XSS not in html, path
        assert escape(XSS) in html
    with scopes_disabled():
        violation = Evaluation.objects.filter(run_id=run_id, policy_name=XSS).get()
    html = client.get(f"/violations/{violation.pk}/").content.decode()
    assert XSS not in html and escape(XSS) in html
    assert f"<mark>{escape(XSS)}</mark>" in html


ODD_METADATA = [
    {"verification": None},
    {"verification": {"claims": "not a list"}},
    {
        "verification": {
            "claims": [
                None,
                3,
                {"verdict": "maybe"},
                {"claim": 5, "best_source": "x"},
                {"claim": "ok", "best_source": {"score": "high"}},
            ],
            "supported_count": "many",
            "unverifiable_ratio": True,
        }
    },
    {
        "citation_failures": [None, "x", {"citation": 7}, {"citation": {"quote": ["a"]}, "problem": None}],
        "citation_failures_total": "lots",
    },
    {"check": "consistency", "contradictions": [None, {"claim_a": ["x"]}], "claims_checked": "two"},
    {"check": "consistency"},
]


def test_odd_metadata_degrades_to_what_can_be_read(alice, acme, evidence_run):
    run_id, _ = evidence_run
    with scopes_disabled():
        run = Run.objects.get(pk=run_id)
        decision = Decision.objects.filter(run=run, phase="after_workflow").get()
        for i, metadata in enumerate(ODD_METADATA):
            Evaluation.objects.create(
                tenant=acme,
                run=run,
                decision=decision,
                policy_name=f"Odd {i}",
                category="grounding",
                agent_name=run.agent_name,
                phase="after_workflow",
                action="warn",
                reason="odd",
                source="verifier",
                metadata=metadata,
            )
    client = signed_in(alice)
    for path in (f"/runs/{run_id}/", f"/runs/{run_id}/?tab=trace"):
        assert client.get(path).status_code == 200, path
    with scopes_disabled():
        ids = list(Evaluation.objects.filter(run=run, policy_name__startswith="Odd ").values_list("pk", flat=True))
    for pk in ids:
        assert client.get(f"/violations/{pk}/").status_code == 200, pk
    html = client.get(f"/runs/{run_id}/").content.decode()
    assert '<span class="badge badge-unknown">unknown</span>' in html  # verdict "maybe" is not trusted as a class
    assert "No source sentence matched." in html


ODD_PROVENANCE = [
    "not a record",
    {"intent": "x", "results_by_source": []},
    {
        "results_by_source": {
            "kb": "not a list",
            "web": [None, {"relevance": 0.5}, {"source_id": "a", "relevance": "hi"}],
        }
    },
    {
        "results": [{"source_id": "flat-1", "relevance": 0.8, "text": "t", "source_name": "merged"}],
        "total_results": "many",
        "retrieval_time_ms": -5,
    },
]


def test_odd_provenance_written_around_the_api_still_renders(alice, acme, evidence_run):
    run_id, _ = evidence_run
    with scopes_disabled():
        for provenance in ODD_PROVENANCE:
            services.run_record_span(
                tenant=acme, run_id=run_id, kind="retrieval", name="odd", attributes={"provenance": provenance}
            )
    html = signed_in(alice).get(f"/runs/{run_id}/?tab=trace").content.decode()
    assert "not a record" in html  # not a record: shown as raw attributes
    assert '<span class="gr-results-source">merged</span>' in html and "<code>flat-1</code>" in html
    assert '<span class="gr-rel-value">—</span>' in html  # a relevance that is not a number


def test_citations_as_strings_and_objects_render_in_the_trace(alice, acme, api):
    create_policy(api, rules={"min_citations": 1, "min_grounding_score": None})
    run_id = start_run(api)
    ground(
        api,
        run_id,
        citations=[
            "Federal Reserve Report",
            {"source_id": "fed-2023"},
            {"source_id": "fed-2023", "quote": "raised its benchmark rate"},
        ],
        sources=[{"id": "fed-2023", "text": FED}],
    )
    html = signed_in(alice).get(f"/runs/{run_id}/?tab=trace").content.decode()
    assert '<li><code class="gr-cite-id">Federal Reserve Report</code></li>' in html
    assert '<li><code class="gr-cite-id">fed-2023</code></li>' in html
    assert '<li><code class="gr-cite-id">fed-2023</code> <q class="gr-quote">raised its benchmark rate</q></li>' in html


# -- Query counts -------------------------------------------------------------------------------------


def test_query_counts_do_not_grow_with_retrievals_claims_or_failures(
    alice, acme, api, evidence_run, django_assert_max_num_queries
):
    small_id, _ = evidence_run
    client = signed_in(alice)
    counts = {}
    for tab in ("governance", "trace"):
        with django_assert_max_num_queries(12) as few:
            client.get(f"/runs/{small_id}/?tab={tab}")
        counts[tab] = len(few.captured_queries)

    create_policy(api, name="Second verifier", rules=RULES)
    big_id = start_run(api)
    many = {
        "knowledge_base": PROVENANCE["results_by_source"]["knowledge_base"]
        + [{"source_id": f"doc-{i}", "relevance": (i % 10) / 10, "text": f"Text {i}."} for i in range(148)],
        **{
            f"source-{k}": [{"source_id": f"s{k}-{i}", "relevance": 0.5, "text": "t"} for i in range(5)]
            for k in range(8)
        },
    }
    for _ in range(6):
        _retrieve(api, big_id, {**PROVENANCE, "results_by_source": many})
    for _ in range(3):
        ground(
            api,
            big_id,
            grounding_scores=[0.9],
            output=OUTPUT * 3,
            citations=CITATIONS + [f"doc-{i}" for i in range(30)],
            sources=[{"id": "fed-2023"}, {"id": "doc-1"}],
        )
    complete(api, big_id, output=OUTPUT * 3)
    for tab in ("governance", "trace"):
        with django_assert_max_num_queries(12) as more:
            response = client.get(f"/runs/{big_id}/?tab={tab}")
        assert response.status_code == 200
        assert len(more.captured_queries) == counts[tab], tab
    html = response.content.decode()
    assert "… and 50 more results from knowledge_base" in html  # 150 results: the first 100 are shown
    with scopes_disabled():
        violation = Evaluation.objects.filter(run_id=big_id, source="verifier", action="block").last()
    with django_assert_max_num_queries(14):
        assert client.get(f"/violations/{violation.pk}/").status_code == 200


# -- Policy form groups and templates ----------------------------------------------------------------


@pytest.mark.parametrize(
    "group, rules",
    [
        ("Context", ("context_mode", "canonical_when_available", "include_retrieved_text", "max_context_chars")),
        ("Citations", ("citation_quotes", "max_citations", "citations_must_resolve")),
        (
            "Verifier",
            (
                "nli_check",
                "nli_phase",
                "entailment_threshold",
                "contradiction_threshold",
                "max_unverifiable_ratio",
                "contradiction_action",
                "unverifiable_action",
            ),
        ),
        ("Checks", ("factual_consistency_check", "min_citations")),
        ("LLM judge", ("llm_grounding_check", "llm_grounding_phase")),
    ],
)
def test_rules_are_grouped_for_the_form(group, rules):
    assert {rule_group(r) for r in rules} == {group}


def test_every_grounding_rule_has_a_group():
    assert [spec.name for spec in CATEGORIES["grounding"].rules if rule_group(spec.name) == OTHER_GROUP] == []


def test_the_form_shows_the_new_groups(client, alice):
    client.force_login(alice)
    page = client.get("/policies/new/?category=grounding").text
    titles = re.findall(r'<span class="form-section-title">([^<]+)</span>', page)
    for group in ("Context", "Citations", "Verifier"):
        assert group in titles
    verifier = _section(page, '<span class="form-section-title">Verifier</span>', "</details>")
    assert 'name="rule_nli_check"' in verifier and 'name="rule_unverifiable_action"' in verifier
    context = _section(page, '<span class="form-section-title">Context</span>', "</details>")
    assert 'name="rule_max_context_chars"' in context and "rule_llm" not in context


@pytest.mark.parametrize(
    "name",
    [
        "Quoted, retrieved citations",
        "Attachments first",
        "RAG with provenance",
        "Self-consistent answers",
        "Local verifier",
    ],
)
def test_the_readme_templates_are_offered(name):
    assert name in [t.name for t in TEMPLATES]


def test_template_badges_say_the_strongest_action():
    assert template_for("local-verifier").action == "block"  # its contradiction_action
    assert template_for("rag-with-provenance").action == "warn"
    assert template_for("attachments-first").action == "warn"  # the default action_on_violation
    assert template_for("quoted-retrieved-citations").rules["citation_quotes"] == "required"


def test_the_local_verifier_template_blocks_a_contradiction(api):
    template = template_for("local-verifier")
    create_policy(api, name=template.name, rules=template.rules)
    run_id = start_run(api)
    ground(
        api,
        run_id,
        grounding_scores=[0.9],
        output=OUTPUT,
        citations=["fed-2023"],
        sources=[{"id": "fed-2023", "text": FED}, {"id": "imf-9", "text": IMF}],
    )
    decision = complete(api, run_id, output=OUTPUT).json()["decision"]
    assert decision["action"] == "block" and "Verifier: 1 claim contradicts the sources" in decision["reason"]


def test_a_provenance_record_on_another_kind_of_span_stays_raw_attributes(alice, acme):
    # A span with a provenance record but no kind=retrieval is left as attributes (it cannot happen
    # through the API, which refuses it).
    with scopes_disabled():
        run = Run.objects.create(tenant=acme, agent_name="research-agent")
        Span.objects.create(tenant=acme, run=run, kind="tool", name="lookup", attributes={"provenance": PROVENANCE})
    html = signed_in(alice).get(f"/runs/{run.pk}/?tab=trace").content.decode()
    assert "gr-retrieval" not in html and "results_by_source" in html
