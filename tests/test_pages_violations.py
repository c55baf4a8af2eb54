"""The violations browser and a violation's review page, for each role."""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_scopes import scopes_disabled
from pages_support import (
    LENIENT,
    STRICT,
    bulk_violations,
    run_through,
    signed_in,
    violations_of,
)

from governance.models import Evaluation
from tenants.models import AuditEvent

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


def _ids(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'<a href="/violations/(\d+)/" aria-label="Violation', html)]


def _db_violations(**filters) -> list[int]:
    with scopes_disabled():
        qs = Evaluation.objects.filter(action__in=("warn", "block"), **filters).order_by("-id")
        return list(qs.values_list("id", flat=True))


@pytest.fixture
def blocked_run(acme, make_policy):
    make_policy(name="Strict Research Grounding", rules=STRICT, agents=["research-*"])
    return run_through(
        acme,
        agent="research-agent",
        scores=(0.9, 0.42),
        citations=["doc-7"],
        claims=["The Eiffel Tower is in Rome"],
        confidence=0.3,
        sources=[{"id": "doc-7", "text": "The Eiffel Tower is in Paris.", "score": 0.88}],
    )


@pytest.fixture
def mid_block(blocked_run):
    return next(e for e in violations_of(blocked_run) if e.phase == "mid_execution")


@pytest.fixture
def after_block(blocked_run):
    return next(e for e in violations_of(blocked_run) if e.phase == "after_workflow")


# -- the list ------------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["alice", "bob", "dave"])
def test_every_member_sees_warns_and_blocks_newest_first(who, request, blocked_run):
    html = signed_in(request.getfixturevalue(who)).get("/violations/").content.decode()
    assert _ids(html) == _db_violations()
    assert len(_ids(html)) == 2  # the mid_execution score block and the after_workflow audit block
    assert "Grounding score (0.42) below threshold (0.8)" in html


def test_allow_evaluations_are_not_violations(alice, acme, make_policy):
    make_policy(name="Strict Research Grounding", rules=STRICT, agents=["research-*"])
    run = run_through(acme, scores=(0.95,), citations=["a", "b"], confidence=0.9)
    client = signed_in(alice)
    html = client.get("/violations/").content.decode()
    assert _ids(html) == []
    assert "No violations yet." in html
    with scopes_disabled():
        allow = Evaluation.objects.filter(run=run).first()
    assert client.get(f"/violations/{allow.pk}/").status_code == 404


def test_another_tenants_violations_are_invisible_and_404(charlie, mid_block):
    client = signed_in(charlie)
    assert _ids(client.get("/violations/").content.decode()) == []
    assert client.get(f"/violations/{mid_block.pk}/").status_code == 404
    response = client.post(f"/violations/{mid_block.pk}/", {"state": "confirmed", "comment": "not mine"})
    assert response.status_code == 404
    with scopes_disabled():
        assert Evaluation.objects.get(pk=mid_block.pk).review_state == "pending"


def test_filters_match_the_database(alice, acme, make_policy):
    make_policy(name="Strict Research Grounding", rules=STRICT, agents=["research-*"])
    make_policy(name="Lenient RAG Agent", rules=LENIENT, agents=["support-*"])
    run_through(acme, agent="research-agent", scores=(0.42,))
    run_through(acme, agent="support-bot", scores=(0.3,))
    run_through(acme, agent="support-bot", scores=(0.9,), citations=["a"])
    client = signed_in(alice)

    def page(query):
        return _ids(client.get(f"/violations/?{query}").content.decode())

    assert page("agent=support-bot") == _db_violations(agent_name="support-bot")
    assert page("policy=Lenient+RAG+Agent") == _db_violations(policy_name="Lenient RAG Agent")
    with scopes_disabled():
        strict_id = Evaluation.objects.filter(policy_name="Strict Research Grounding").first().policy_ref
    assert page(f"policy={strict_id}") == _db_violations(policy_ref=strict_id)
    assert page("phase=after_workflow") == _db_violations(phase="after_workflow")
    assert page("action=warn") == _db_violations(action="warn")
    assert page("action=block&phase=mid_execution") == _db_violations(action="block", phase="mid_execution")
    assert page("review_state=pending") == _db_violations()
    assert page("review_state=confirmed") == []
    assert set(page("")) == set(page("action=warn")) | set(page("action=block"))
    assert page("action=allow") == []  # not a violation action: refused, nothing listed


def test_date_range_filter_and_empty_period_message(alice, acme):
    now = timezone.now()
    old_ids = bulk_violations(acme, count=6, actions=("block",), start=now - timedelta(days=10))
    new_ids = bulk_violations(acme, count=4, actions=("warn",), start=now - timedelta(hours=1))
    client = signed_in(alice)
    since = (now - timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
    assert _ids(client.get(f"/violations/?since={since}").content.decode()) == sorted(new_ids, reverse=True)
    assert _ids(client.get(f"/violations/?until={since}").content.decode()) == sorted(old_ids, reverse=True)
    future = (now + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    html = client.get(f"/violations/?since={future}").content.decode()
    assert "No violations in this period." in html
    bad = client.get("/violations/?since=yesterday-ish").content.decode()
    assert 'id="f-since-error"' in bad and _ids(bad) == []


@pytest.mark.parametrize("page", ["/violations/", "/runs/", "/audit/"])
def test_a_moment_utc_cannot_hold_is_shown_beside_its_field_not_a_500(alice, acme, page):
    response = signed_in(alice).get(page, {"until": "9999-12-31T23:59:59-01:00"})

    assert response.status_code == 200
    assert "Must be between the years 1 and 9999 in UTC." in response.content.decode()


def test_htmx_filter_swap_returns_only_the_results(alice, blocked_run):
    response = signed_in(alice).get("/violations/?phase=mid_execution", **HX)
    body = response.content.decode()
    assert body.strip().startswith('<section id="violation-results"')
    assert "<html" not in body and len(_ids(body)) == 1
    assert "HX-Request" in response["Vary"]


def _walk(client, url):
    pages, seen = [], []
    while url:
        html = client.get(url).content.decode()
        ids = _ids(html)
        pages.append(ids)
        seen += ids
        older = re.search(r'href="\?((?:[^"]*&amp;)?before=\d+)"', html)
        url = "/violations/?" + older.group(1).replace("&amp;", "&") if older else None
    return pages, seen


def test_keyset_pagination_lists_every_violation_once(alice, acme):
    bulk_violations(acme, count=390, actions=("warn", "block", "allow"))  # 260 violations
    client = signed_in(alice)
    pages, seen = _walk(client, "/violations/")
    assert seen == _db_violations()
    assert [len(p) for p in pages] == [50, 50, 50, 50, 50, 10]

    pages, seen = _walk(client, "/violations/?action=block")
    assert seen == _db_violations(action="block")
    assert len(seen) == 130


def test_newer_link_returns_to_the_previous_page(alice, acme):
    bulk_violations(acme, count=300, actions=("warn", "block"))
    client = signed_in(alice)
    first = client.get("/violations/").content.decode()
    older = re.search(r'href="\?before=(\d+)"', first).group(1)
    second = client.get(f"/violations/?before={older}").content.decode()
    older2 = re.search(r'href="\?before=(\d+)"', second).group(1)
    third = client.get(f"/violations/?before={older2}").content.decode()
    newer = re.search(r'href="\?after=(\d+)"', third).group(1)
    assert _ids(client.get(f"/violations/?after={newer}").content.decode()) == _ids(second)
    newer_of_second = re.search(r'href="\?after=(\d+)"', second).group(1)
    assert _ids(client.get(f"/violations/?after={newer_of_second}").content.decode()) == _ids(first)


def test_violations_page_reads_by_index_range_without_count_or_offset(alice, acme):
    bulk_violations(acme, count=300)
    client = signed_in(alice)
    with CaptureQueriesContext(connection) as ctx:
        client.get("/violations/?agent=bulk-agent&before=999999")
    evaluations = [q["sql"] for q in ctx.captured_queries if '"governance_evaluation"' in q["sql"]]
    reads = [sql for sql in evaluations if "LIMIT 51" in sql]
    assert len(reads) == 2  # one range scan per action: warn, block
    # Beside the page only the next pending one; the counts per review state load apart (below).
    assert len(evaluations) == 2 + 1
    with CaptureQueriesContext(connection) as ctx:
        client.get("/violations/counts/?agent=bulk-agent&before=999999", HTTP_HX_REQUEST="true")
    counts = [q["sql"] for q in ctx.captured_queries if "COUNT(" in q["sql"].upper()]
    assert len(counts) == 3 and all("LIMIT 1001" in sql for sql in counts)
    for sql in reads:
        assert "COUNT(" not in sql.upper() and "OFFSET" not in sql.upper()
        assert "LIMIT 51" in sql
        assert re.search(r'"governance_evaluation"\."action" = \'(warn|block)\'', sql)
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN QUERY PLAN " + reads[0].replace("%s", "?"))
            plan = " ".join(str(row) for row in cursor.fetchall())
        assert "USING INDEX" in plan and "TEMP B-TREE" not in plan, plan


def test_violations_query_count_does_not_grow_with_rows(alice, acme, django_assert_max_num_queries):
    client = signed_in(alice)
    bulk_violations(acme, count=4)
    # session, user, membership, the two range scans, the next pending, policy names
    with django_assert_max_num_queries(12) as few:
        client.get("/violations/")
    bulk_violations(acme, count=400)
    with django_assert_max_num_queries(12) as many:
        client.get("/violations/")
    assert len(many.captured_queries) == len(few.captured_queries)


# -- one violation -------------------------------------------------------------------------------


def test_mid_execution_violation_shows_the_report_it_judged(bob, mid_block):
    response = signed_in(bob).get(f"/violations/{mid_block.pk}/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "Grounding score (0.42) below threshold (0.8)" in html
    assert "report 1" in html
    assert "The Eiffel Tower is in Rome" in html  # unsupported claim
    assert "The Eiffel Tower is in Paris." in html and "retrieval score 0.88" in html  # source
    assert "&lt; 0.8" in html  # the failing score against the threshold
    assert "Other evaluations in this run" in html and "after_workflow" in html
    assert 'name="state" value="confirmed"' in html and 'name="state" value="dismissed"' in html


def test_after_workflow_violation_shows_what_the_run_collected(alice, after_block):
    html = signed_in(alice).get(f"/violations/{after_block.pk}/").content.decode()
    assert "Citations (1) below minimum (2)" in html
    assert "everything the run collected" in html
    assert "Policy minimum: 2" in html
    assert "(abstention threshold 0.5)" in html


def test_viewer_reads_but_has_no_review_form_and_posting_is_refused(dave, mid_block):
    client = signed_in(dave)
    html = client.get(f"/violations/{mid_block.pk}/").content.decode()
    assert 'name="state"' not in html
    assert "your role can read them" in html
    response = client.post(f"/violations/{mid_block.pk}/", {"state": "confirmed", "comment": "sneaky"})
    assert response.status_code == 403
    htmx = client.post(f"/violations/{mid_block.pk}/", {"state": "dismissed"}, **HX)
    assert htmx.status_code == 403
    with scopes_disabled():
        assert Evaluation.objects.get(pk=mid_block.pk).review_state == "pending"
        assert not AuditEvent.objects.filter(action__startswith="governance.violation.").exists()


def test_reviewer_confirms_without_javascript_and_is_redirected(bob, mid_block):
    client = signed_in(bob)
    response = client.post(f"/violations/{mid_block.pk}/", {"state": "confirmed", "comment": "Score was real."})
    assert response.status_code == 302 and response["Location"] == f"/violations/{mid_block.pk}/"
    page = client.get(response["Location"]).content.decode()
    assert f"Violation {mid_block.pk} confirmed." in page
    assert "Score was real." in page and "by bob" in page


def test_reviewer_dismisses_over_htmx_and_gets_the_review_panel(bob, mid_block):
    response = signed_in(bob).post(f"/violations/{mid_block.pk}/", {"state": "dismissed", "comment": "Test data"}, **HX)
    body = response.content.decode()
    assert response.status_code == 200
    assert body.strip().startswith('<section id="review-panel"')
    assert "Marked <strong>dismissed</strong>" in body and "Test data" in body and "by bob" in body
    with scopes_disabled():
        assert Evaluation.objects.get(pk=mid_block.pk).review_state == "dismissed"


def test_bad_review_input_is_refused_with_messages_next_to_the_field(alice, mid_block):
    client = signed_in(alice)
    response = client.post(f"/violations/{mid_block.pk}/", {"state": "maybe", "comment": "x"})
    assert response.status_code == 422
    assert "Choose confirm or dismiss." in response.content.decode()
    long = client.post(f"/violations/{mid_block.pk}/", {"state": "confirmed", "comment": "x" * 2001}, **HX)
    body = long.content.decode()
    assert long.status_code == 200 and 'id="review-comment-error"' in body
    assert "at most 2000 characters" in body
    with scopes_disabled():
        assert Evaluation.objects.get(pk=mid_block.pk).review_state == "pending"


def test_violation_detail_query_count_is_bounded(alice, acme, blocked_run, mid_block, django_assert_max_num_queries):
    client = signed_in(alice)
    with django_assert_max_num_queries(10) as few:
        assert client.get(f"/violations/{mid_block.pk}/").status_code == 200
    bulk_violations(acme, count=120, run=blocked_run)
    with django_assert_max_num_queries(10) as many:
        assert client.get(f"/violations/{mid_block.pk}/").status_code == 200
    assert len(many.captured_queries) == len(few.captured_queries)


# -- who may do what, page by page --------------------------------------------------------------------


@pytest.mark.parametrize("who, can_review", [("alice", True), ("bob", True), ("dave", False)])
def test_role_matrix_for_every_page(who, can_review, request, blocked_run, mid_block):
    client = signed_in(request.getfixturevalue(who))
    for url in (
        "/",
        "/?period=30d",
        "/runs/",
        f"/runs/{blocked_run.pk}/",
        f"/runs/{blocked_run.pk}/?tab=trace",
        "/violations/",
        f"/violations/{mid_block.pk}/",
        "/audit/",
    ):
        assert client.get(url).status_code == 200, url
    expected = 200 if can_review else 403
    assert client.get("/audit/export?format=csv").status_code == expected
    assert client.get("/evaluations/export?format=jsonl").status_code == expected
    review = client.post(f"/violations/{mid_block.pk}/", {"state": "confirmed", "comment": who})
    assert review.status_code == (302 if can_review else 403)


def test_a_signed_in_user_without_a_tenant_sees_nothing(django_user_model, blocked_run, mid_block):
    loner = django_user_model.objects.create_user("loner", "loner@example.com", "correct-horse-battery")
    client = signed_in(loner)
    for url in (
        "/",
        "/runs/",
        f"/runs/{blocked_run.pk}/",
        "/violations/",
        f"/violations/{mid_block.pk}/",
        "/audit/",
        "/audit/export?format=csv",
    ):
        # sent to the welcome page, which tells them how to join a workspace
        response = client.get(url)
        assert response.status_code == 302 and response["Location"] == "/welcome/", url
    assert client.post(f"/violations/{mid_block.pk}/", {"state": "confirmed"}).status_code == 403


def test_anonymous_visitors_are_sent_to_sign_in_everywhere(client, blocked_run, mid_block):
    for url in (
        "/",
        "/runs/",
        f"/runs/{blocked_run.pk}/",
        "/violations/",
        f"/violations/{mid_block.pk}/",
        "/audit/",
        "/audit/export?format=csv",
        "/evaluations/export?format=csv",
    ):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url
    assert client.post(f"/violations/{mid_block.pk}/", {"state": "confirmed"}).status_code == 302
