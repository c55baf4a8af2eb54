"""The audit log page and the page-side exports of the audit log and the evaluations."""

import csv
import io
import json
import re

import pytest
from django_scopes import scope, scopes_disabled
from pages_support import STRICT, bulk_violations, run_through, signed_in, violations_of

from governance.models import Evaluation
from tenants.audit import Actor, audit_record
from tenants.models import AuditEvent

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


def _event_ids(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'<tr data-event="(\d+)">', html)]


def _body(response) -> str:
    return b"".join(response.streaming_content).decode()


def _csv(response) -> list[dict]:
    return list(csv.DictReader(io.StringIO(_body(response))))


def _db_events(**filters) -> list[int]:
    with scopes_disabled():
        return list(AuditEvent.objects.filter(**filters).order_by("-id").values_list("id", flat=True))


@pytest.fixture
def reviewed(acme, bob, make_policy):
    """A blocked run whose mid_execution block bob confirmed: policy and review events in the log."""
    make_policy(name="Strict Research Grounding", rules=STRICT, agents=["research-*"])
    run = run_through(acme, scores=(0.42,))
    violation = violations_of(run)[0]
    signed_in(bob).post(f"/violations/{violation.pk}/", {"state": "confirmed", "comment": "Looks fabricated"})
    return violation


def _many_events(tenant, count):
    with scope(tenant=tenant):
        for i in range(count):
            audit_record(
                tenant=tenant,
                action=f"tests.bulk.{'even' if i % 2 == 0 else 'odd'}",
                actor=Actor.system("bulk"),
                object_type="tests.thing",
                object_id=i,
                after={"i": i},
            )


@pytest.mark.parametrize("who", ["alice", "bob", "dave"])
def test_every_member_reads_the_audit_log(who, request, reviewed):
    html = signed_in(request.getfixturevalue(who)).get("/audit/").content.decode()
    assert "governance.violation.confirmed" in html
    assert _event_ids(html) == _db_events(tenant__slug="acme")[:50]
    assert f'<a href="/violations/{reviewed.pk}/">Violation #{reviewed.pk}</a>' in html


def test_only_reviewers_and_admins_get_export_buttons(alice, bob, dave, reviewed):
    for user in (alice, bob):
        html = signed_in(user).get("/audit/").content.decode()
        assert "Export CSV" in html and "Export JSON Lines" in html and "Export evaluations" in html
    html = signed_in(dave).get("/audit/").content.decode()
    assert "Export CSV" not in html and "Export evaluations" not in html


def test_viewer_cannot_download_exports(dave, reviewed):
    client = signed_in(dave)
    assert client.get("/audit/export?format=csv").status_code == 403
    assert client.get("/evaluations/export?format=jsonl").status_code == 403


def test_other_tenants_events_are_not_shown_or_exported(charlie, reviewed):
    client = signed_in(charlie)
    html = client.get("/audit/").content.decode()
    assert "governance.violation.confirmed" not in html
    rows = _csv(client.get("/audit/export?format=csv"))
    assert rows and all(not r["action"].startswith("governance.violation") for r in rows)
    assert {r["id"] for r in rows} == {str(i) for i in _db_events(tenant__slug="globex")}
    assert _csv(client.get("/evaluations/export?format=csv")) == []


def test_filters_narrow_the_log(alice, reviewed):
    client = signed_in(alice)
    html = client.get("/audit/?action=governance.violation").content.decode()
    assert _event_ids(html) == _db_events(action__startswith="governance.violation")
    html = client.get("/audit/?actor=bob").content.decode()
    assert _event_ids(html) == _db_events(actor_label="bob")
    html = client.get("/audit/?object_type=policies.policy").content.decode()
    assert _event_ids(html) == _db_events(object_type="policies.policy")
    html = client.get("/audit/?actor=nobody").content.decode()
    assert "No audit events match these filters." in html
    bad = client.get("/audit/?since=not-a-date").content.decode()
    assert 'id="f-since-error"' in bad and _event_ids(bad) == []


def test_htmx_filter_swap_returns_the_results_with_matching_export_links(alice, reviewed):
    response = signed_in(alice).get("/audit/?action=governance.violation", **HX)
    body = response.content.decode()
    assert body.strip().startswith('<section id="audit-results"') and "<html" not in body
    assert 'href="/audit/export?action=governance.violation&amp;format=csv"' in body
    assert 'href="/audit/export?action=governance.violation&amp;format=jsonl"' in body
    assert "HX-Request" in response["Vary"]


def test_keyset_pagination_lists_every_event_once(alice, acme):
    _many_events(acme, 140)
    client = signed_in(alice)
    seen, url = [], "/audit/?action=tests."
    while url:
        html = client.get(url).content.decode()
        seen += _event_ids(html)
        older = re.search(r'href="\?action=tests.&amp;before=(\d+)"', html)
        url = f"/audit/?action=tests.&before={older.group(1)}" if older else None
    assert seen == _db_events(action__startswith="tests.")
    assert len(seen) == 140


def test_audit_page_query_count_does_not_grow(alice, acme, django_assert_max_num_queries):
    client = signed_in(alice)
    with django_assert_max_num_queries(6) as few:
        client.get("/audit/")
    _many_events(acme, 120)
    with django_assert_max_num_queries(6) as many:
        client.get("/audit/")
    assert len(many.captured_queries) == len(few.captured_queries)


def test_csv_export_downloads_exactly_the_filtered_rows(bob, reviewed):
    response = signed_in(bob).get("/audit/export?action=governance.violation&format=csv")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert re.match(r'attachment; filename="audit-log-\d{8}T\d{6}Z\.csv"', response["Content-Disposition"])
    rows = _csv(response)
    assert [int(r["id"]) for r in rows] == sorted(_db_events(action__startswith="governance.violation"))
    (row,) = rows
    assert row["action"] == "governance.violation.confirmed" and row["actor"] == "bob"
    assert row["object_id"] == str(reviewed.pk)
    assert json.loads(row["after"])["review_comment"] == "Looks fabricated"


def test_jsonl_export_of_the_whole_log_matches_the_database(alice, reviewed):
    response = signed_in(alice).get("/audit/export?format=jsonl")
    assert response["Content-Type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in _body(response).splitlines()]
    assert [line["id"] for line in lines] == sorted(_db_events(tenant__slug="acme"))


def test_export_rejects_unknown_format_and_bad_filters(alice, reviewed):
    client = signed_in(alice)
    assert client.get("/audit/export?format=xlsx").status_code == 400
    bad = client.get("/audit/export?format=csv&since=nope")
    assert bad.status_code == 400 and "since" in bad.content.decode()


def test_evaluations_export_uses_the_evaluation_filters(alice, acme, reviewed):
    bulk_violations(acme, count=30, agent="other-agent")
    client = signed_in(alice)
    rows = _csv(client.get("/evaluations/export?format=csv&action=block&action=warn&agent=research-agent"))
    with scopes_disabled():
        expected = list(
            Evaluation.objects.filter(agent_name="research-agent", action__in=("warn", "block"))
            .order_by("id")
            .values_list("id", flat=True)
        )
    assert [int(r["id"]) for r in rows] == expected
    confirmed = [r for r in rows if r["review_state"] == "confirmed"]
    assert [int(r["id"]) for r in confirmed] == [reviewed.pk]
    assert confirmed[0]["review_comment"] == "Looks fabricated"

    lines = _body(client.get("/evaluations/export?format=jsonl&review_state=confirmed")).splitlines()
    assert [json.loads(line)["id"] for line in lines] == [reviewed.pk]
