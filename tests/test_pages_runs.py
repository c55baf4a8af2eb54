"""The runs list and a run's Governance and Trace tabs, as each role sees them."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from django_scopes import scopes_disabled
from pages_support import STRICT, bulk_violations, run_through, signed_in

from governance.models import Decision, Evaluation, Run

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


def _run_ids(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'href="/runs/(\d+)/">#', html)]


@pytest.fixture
def blocked_run(acme, make_policy):
    make_policy(name="Strict Research Grounding", rules=STRICT, agents=["research-*"])
    return run_through(acme, agent="research-agent", scores=(0.9, 0.42))


def test_anonymous_visitor_is_sent_to_sign_in(client):
    response = client.get("/runs/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("who", ["alice", "bob", "dave"])
def test_every_member_sees_the_runs_of_their_tenant(who, request, blocked_run):
    user = request.getfixturevalue(who)
    response = signed_in(user).get("/runs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "research-agent" in html
    assert _run_ids(html) == [blocked_run.pk]
    assert "badge-block" in html


def test_another_tenants_runs_are_invisible_and_404(charlie, blocked_run):
    client = signed_in(charlie)
    assert _run_ids(client.get("/runs/").content.decode()) == []
    assert client.get(f"/runs/{blocked_run.pk}/").status_code == 404
    assert client.get(f"/runs/{blocked_run.pk}/?tab=trace").status_code == 404


def test_empty_state_when_no_runs(alice):
    html = signed_in(alice).get("/runs/").content.decode()
    assert "No runs yet." in html


def test_filters_by_agent_status_and_final_action(alice, acme, make_policy):
    make_policy(name="Strict Research Grounding", rules=STRICT, agents=["research-*"])
    blocked = run_through(acme, agent="research-agent", scores=(0.9,))
    passed = run_through(acme, agent="support-bot", scores=(0.95,), citations=["a", "b"])
    running = run_through(acme, agent="support-bot", complete=False)
    client = signed_in(alice)

    assert _run_ids(client.get("/runs/?agent=support-bot").content.decode()) == [running.pk, passed.pk]
    assert _run_ids(client.get("/runs/?final_action=block").content.decode()) == [blocked.pk]
    assert _run_ids(client.get("/runs/?status=running").content.decode()) == [running.pk]
    assert _run_ids(client.get("/runs/?status=completed&agent=support-bot").content.decode()) == [passed.pk]
    html = client.get("/runs/?agent=nobody").content.decode()
    assert "No runs match these filters." in html


def test_invalid_filter_shows_the_error_beside_the_field_and_no_rows(alice, blocked_run):
    response = signed_in(alice).get("/runs/?status=exploded")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="f-status-error"' in html and "Select a valid choice" in html
    assert _run_ids(html) == []


def test_htmx_request_gets_only_the_results_fragment(alice, blocked_run):
    client = signed_in(alice)
    full = client.get("/runs/")
    fragment = client.get("/runs/?agent=research-agent", **HX)
    assert "<html" in full.content.decode() and "HX-Request" in full["Vary"]
    body = fragment.content.decode()
    assert "<html" not in body and "<form" not in body
    assert body.strip().startswith('<section id="run-results"')
    assert _run_ids(body) == [blocked_run.pk]
    assert "HX-Request" in fragment["Vary"]


def test_boosted_and_history_restore_requests_get_the_full_page(alice, blocked_run):
    client = signed_in(alice)
    assert "<html" in client.get("/runs/", HTTP_HX_BOOSTED="true", **HX).content.decode()
    assert "<html" in client.get("/runs/", HTTP_HX_HISTORY_RESTORE_REQUEST="true", **HX).content.decode()


def _many_runs(tenant, count):
    now = timezone.now()
    with scopes_disabled():
        Run.objects.bulk_create(
            Run(
                tenant=tenant,
                agent_name=f"agent-{i % 7}",
                workflow_name="wf",
                status="completed",
                started_at=now - timedelta(minutes=count - i),
                ended_at=now - timedelta(minutes=count - i) + timedelta(seconds=2),
            )
            for i in range(count)
        )
        return list(Run.objects.filter(tenant=tenant).order_by("-id").values_list("id", flat=True))


def test_keyset_pagination_walks_every_run_once_both_ways(alice, acme):
    expected = _many_runs(acme, 123)
    client = signed_in(alice)
    seen, url, pages = [], "/runs/", []
    while url:
        html = client.get(url).content.decode()
        ids = _run_ids(html)
        pages.append(ids)
        seen += ids
        older = re.search(r'href="\?before=(\d+)"', html)
        url = f"/runs/?before={older.group(1)}" if older else None
    assert seen == expected  # newest first, nothing missing, nothing twice
    assert [len(p) for p in pages] == [50, 50, 23]
    assert "Older →" not in html

    # Back towards the newest rows with ?after=.
    newer = re.search(r'href="\?after=(\d+)"', html)
    back = _run_ids(client.get(f"/runs/?after={newer.group(1)}").content.decode())
    assert back == pages[1]


def test_pagination_keeps_the_filters(alice, acme):
    _many_runs(acme, 400)  # 57 of them by agent-3: two pages
    client = signed_in(alice)
    html = client.get("/runs/?agent=agent-3").content.decode()
    older = re.search(r'href="\?agent=agent-3&amp;before=(\d+)"', html)
    assert older, "the Older link keeps the agent filter"
    with scopes_disabled():
        expected = list(Run.objects.filter(agent_name="agent-3").order_by("-id").values_list("id", flat=True))
    second = _run_ids(client.get(f"/runs/?agent=agent-3&before={older.group(1)}").content.decode())
    assert _run_ids(html) + second == expected


def test_bad_cursors_are_ignored(alice, blocked_run):
    client = signed_in(alice)
    for cursor in ("abc", "-5", "0", "99999999999999999999999"):
        response = client.get(f"/runs/?before={cursor}")
        assert response.status_code == 200
        assert _run_ids(response.content.decode()) == [blocked_run.pk]


def test_runs_list_query_count_does_not_grow_with_rows(alice, acme, django_assert_max_num_queries):
    client = signed_in(alice)
    _many_runs(acme, 3)
    with django_assert_max_num_queries(8) as few:
        client.get("/runs/")
    _many_runs(acme, 200)
    with django_assert_max_num_queries(8) as many:
        client.get("/runs/")
    assert len(many.captured_queries) == len(few.captured_queries)


# -- the run page --------------------------------------------------------------------------------


def test_governance_tab_lists_every_evaluation_by_phase_with_seed_fields(alice, blocked_run):
    response = signed_in(alice).get(f"/runs/{blocked_run.pk}/")
    html = response.content.decode()
    assert response.status_code == 200
    # Phases in workflow order.
    positions = [html.index(f'id="phase-{p}"') for p in ("before_workflow", "mid_execution", "after_workflow")]
    assert positions == sorted(positions)
    assert "Strict Research Grounding" in html
    assert "Grounding score (0.42) below threshold (0.8)" in html
    assert "Citations (0) below minimum (2); No source citations provided (grounding required)" in html
    # Metadata as key/value pairs: {"score": 0.42, "threshold": 0.8}.
    assert re.search(r"<dt>score</dt><dd><span class=\"json-num\">0.42</span>", html)
    assert re.search(r"<dt>citation_count</dt><dd><span class=\"json-num\">0</span>", html)
    assert 'class="gr-source gr-source--engine">engine<' in html
    assert 'aria-current="page">Governance<' in html
    assert "Open to review" in html  # violations link to their review page


def test_allow_run_shows_the_passing_audit(alice, acme, make_policy):
    make_policy(name="Strict Research Grounding", rules=STRICT, agents=["research-*"])
    run = run_through(acme, scores=(0.9, 0.85), citations=["doc-1", "doc-2", "doc-3"], confidence=0.9)
    html = signed_in(alice).get(f"/runs/{run.pk}/?tab=governance").content.decode()
    assert "Grounding audit passed (3 citations)" in html
    assert "Open to review" not in html


def test_trace_tab_shows_spans_and_grounding_report_in_time_order(alice, acme, make_policy):
    make_policy(name="Strict Research Grounding", rules=STRICT, agents=["research-*"])
    run = run_through(
        acme,
        scores=(0.9, 0.42),
        citations=["doc-7"],
        claims=["Paris has 40 million people"],
        confidence=0.35,
        sources=[{"id": "doc-7", "text": "Paris is the capital.", "score": 0.91}],
    )
    response = signed_in(alice).get(f"/runs/{run.pk}/?tab=trace")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'aria-current="page">Trace<' in html
    timeline = html[html.index('<ol class="gr-timeline">') :]
    order = [
        timeline.index(s)
        for s in (
            "<code>before_workflow</code>",
            "source_retrieval",
            "gpt-4o-mini",
            "Grounding report 1",
            "<code>after_workflow</code>",
        )
    ]
    assert order == sorted(order)
    assert "120 ms" in html and "770 ms" in html  # span durations
    # Each score against each policy's threshold.
    assert re.search(r"gr-score--fail\">\s*<span class=\"gr-score-value\">0.42</span>", html)
    assert "&lt; 0.8" in html and "≥ 0.8" in html
    assert "Paris has 40 million people" in html
    assert "doc-7" in html and "retrieval score 0.91" in html
    assert "abstention threshold 0.5" in html  # confidence 0.35 against the policy's abstention threshold


def test_tab_switch_over_htmx_returns_the_tab_fragment(alice, blocked_run):
    response = signed_in(alice).get(f"/runs/{blocked_run.pk}/?tab=trace", **HX)
    body = response.content.decode()
    assert body.strip().startswith('<div id="run-tabs"')
    assert "<html" not in body and "source_retrieval" in body
    assert "HX-Request" in response["Vary"]


def test_unknown_tab_falls_back_to_governance(alice, blocked_run):
    html = signed_in(alice).get(f"/runs/{blocked_run.pk}/?tab=<script>").content.decode()
    assert 'aria-current="page">Governance<' in html


def test_metadata_of_any_shape_is_shown_and_escaped(alice, acme, blocked_run):
    odd = [
        {"nested": {"deeper": {"deepest": {"and": {"more": [1, 2, {"x": None}]}}}}, "flag": True},
        ["a", 1, None, {"k": "v"}],
        "<script>alert(1)</script>",
        12.5,
        False,
        {"long": "x" * 5000, "many": list(range(200))},
    ]
    with scopes_disabled():
        decision = Decision.objects.filter(run=blocked_run).last()
        for i, metadata in enumerate(odd):
            Evaluation.objects.create(
                tenant=acme,
                run=blocked_run,
                decision=decision,
                policy_name=f"Odd {i}",
                category="custom",
                agent_name="research-agent",
                phase="after_workflow",
                action="warn",
                reason="<b>bold</b> reason",
                metadata=metadata,
            )
    response = signed_in(alice).get(f"/runs/{blocked_run.pk}/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>bold</b>" not in html
    assert "more characters" in html  # long text is cut short
    assert "150 more" in html  # long lists too
    assert "deepest" in html


def test_judge_evaluation_shows_model_latency_tokens_and_cost(alice, acme, blocked_run):
    with scopes_disabled():
        decision = Decision.objects.filter(run=blocked_run, phase="after_workflow").get()
        Evaluation.objects.create(
            tenant=acme,
            run=blocked_run,
            decision=decision,
            policy_name="Strict Research Grounding",
            category="grounding",
            agent_name="research-agent",
            phase="after_workflow",
            action="warn",
            reason="LLM judge score (0.3) below threshold (0.7)",
            source="llm_judge",
            metadata={
                "status": "ok",
                "score": 0.3,
                "model": "gpt-4o-mini",
                "provider": "openai",
                "latency_ms": 412.5,
                "input_tokens": 512,
                "output_tokens": 6,
                "cost_usd": 0.0000804,
            },
        )
    html = signed_in(alice).get(f"/runs/{blocked_run.pk}/").content.decode()
    # In the judged row's details, up to its source cell.
    row = html[html.index("LLM judge score (0.3) below threshold (0.7)") :]
    judge = row[: row.index('gr-source--llm_judge">llm_judge')]
    assert "gpt-4o-mini" in judge and "412 ms" in judge and "512 in / 6 out tokens" in judge
    assert "$0.00008" in judge


def test_run_page_query_count_does_not_grow_with_evaluations(alice, acme, make_policy, django_assert_max_num_queries):
    make_policy(name="Strict Research Grounding", rules=STRICT, agents=["research-*"])
    run = run_through(acme)
    client = signed_in(alice)
    with django_assert_max_num_queries(12) as few_gov:
        client.get(f"/runs/{run.pk}/")
    with django_assert_max_num_queries(12) as few_trace:
        client.get(f"/runs/{run.pk}/?tab=trace")
    for i in range(2, 7):
        make_policy(name=f"Policy {i}", rules=STRICT, agents=["research-*"])
    bigger = run_through(acme)
    bulk_violations(acme, count=150, run=bigger)
    with django_assert_max_num_queries(12) as many_gov:
        client.get(f"/runs/{bigger.pk}/")
    with django_assert_max_num_queries(12) as many_trace:
        client.get(f"/runs/{bigger.pk}/?tab=trace")
    assert len(many_gov.captured_queries) == len(few_gov.captured_queries)
    assert len(many_trace.captured_queries) == len(few_trace.captured_queries)


def test_running_run_without_reports_renders(alice, acme):
    with scopes_disabled():
        run = Run.objects.create(tenant=acme, agent_name="lonely-agent")
    client = signed_in(alice)
    assert "No evaluations yet." in client.get(f"/runs/{run.pk}/").content.decode()
    assert "Nothing recorded yet." in client.get(f"/runs/{run.pk}/?tab=trace").content.decode()


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata", "America/St_Johns"])
def test_the_list_time_filters_write_what_the_date_filter_writes(zone):
    """The runs list writes its times with governance.templatetags.evidence's two filters, which
    must give exactly what `date:'c'` and `date:"Y-m-d H:i:s"` give."""
    from datetime import UTC, datetime

    from django.template import engines
    from django.utils import timezone

    django_way = engines["django"].from_string("""{{ d|date:'c' }}|{{ d|date:"Y-m-d H:i:s" }}""")
    ours = engines["django"].from_string("{% load evidence %}{{ d|iso_datetime }}|{{ d|to_the_second }}")
    values = [
        datetime(2026, 11, 26, 10, 31, 7, 913075, tzinfo=UTC),
        datetime(2026, 3, 29, 1, 0, 0, tzinfo=UTC),  # no microseconds; a DST change in Europe
        datetime(812, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
        None,
        "",
    ]
    with timezone.override(zone):
        for value in values:
            assert ours.render({"d": value}) == django_way.render({"d": value}), value
