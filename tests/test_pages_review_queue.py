"""The violations list as a review queue: bulk confirm or dismiss of the selected rows with one comment
(one audit entry per row changed, all in one transaction), counts per review state, next pending."""

import re

import pytest
from django_scopes import scopes_disabled
from pages_support import bulk_violations, signed_in

from governance.models import Evaluation
from tenants.models import AuditEvent

pytestmark = pytest.mark.django_db


def _review_events():
    with scopes_disabled():
        return list(AuditEvent.objects.filter(action__startswith="governance.violation.").order_by("id"))


def _states(ids) -> list[tuple[str, str]]:
    with scopes_disabled():
        rows = Evaluation.objects.filter(pk__in=ids).order_by("id")
        return [(e.review_state, e.review_comment) for e in rows]


def _messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


@pytest.fixture
def queue(acme):
    """Six warns and blocks (and three allows between them), newest last."""
    ids = bulk_violations(acme, count=9)
    with scopes_disabled():
        return [pk for pk in ids if Evaluation.objects.get(pk=pk).is_violation]


def test_bulk_confirm_changes_the_selected_rows_with_one_audit_entry_each(bob, queue):
    chosen = queue[:3]
    response = signed_in(bob).post(
        "/violations/review/",
        {
            "ids": chosen,
            "state": "confirmed",
            "comment": "Same fabricated figure.",
            "next": "/violations/?agent=bulk-agent",
        },
        follow=True,
    )
    assert response.redirect_chain == [("/violations/?agent=bulk-agent", 302)]
    assert "3 violations confirmed." in _messages(response)
    assert _states(chosen) == [("confirmed", "Same fabricated figure.")] * 3
    assert _states(queue[3:]) == [("pending", "")] * 3
    events = _review_events()
    assert [(e.action, e.object_id, e.after["review_comment"]) for e in events] == [
        ("governance.violation.confirmed", str(pk), "Same fabricated figure.") for pk in chosen
    ]
    assert all(e.actor_label == "bob" or e.actor_id for e in events)


def test_a_second_identical_review_changes_nothing_and_audits_nothing(bob, queue):
    client = signed_in(bob)
    client.post("/violations/review/", {"ids": queue[:2], "state": "dismissed", "comment": "noise"})
    response = client.post(
        "/violations/review/", {"ids": queue[:3], "state": "dismissed", "comment": "noise"}, follow=True
    )
    assert "1 violation dismissed." in _messages(response)
    assert len(_review_events()) == 3


def test_another_tenants_row_in_the_selection_changes_nothing(bob, queue, globex):
    theirs = bulk_violations(globex, count=1, actions=("block",))
    response = signed_in(bob).post(
        "/violations/review/", {"ids": [*queue[:2], *theirs], "state": "confirmed"}, follow=True
    )
    assert "Some of the selected rows are not violations of this tenant." in _messages(response)
    assert _states(queue[:2]) == [("pending", "")] * 2 and _states(theirs) == [("pending", "")]
    assert _review_events() == []


def test_an_allow_in_the_selection_changes_nothing(bob, acme):
    ids = bulk_violations(acme, count=3)  # warn, block, allow
    response = signed_in(bob).post("/violations/review/", {"ids": ids, "state": "confirmed"}, follow=True)
    assert "Some of the selected rows are not violations of this tenant." in _messages(response)
    assert _review_events() == []


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"state": "confirmed"}, "Select at least one violation."),
        ({"ids": ["x"], "state": "confirmed"}, "Select violations from the list."),
        ({"ids": "QUEUE", "state": "maybe"}, "Choose confirm or dismiss."),
        (
            {"ids": "QUEUE", "state": "confirmed", "comment": "x" * 2001},
            "Ensure this value has at most 2000 characters (it has 2001).",
        ),
    ],
)
def test_bad_bulk_input_is_told_and_writes_nothing(bob, queue, form, message):
    if form.get("ids") == "QUEUE":
        form = {**form, "ids": queue[:2]}
    response = signed_in(bob).post("/violations/review/", form, follow=True)
    assert message in _messages(response)
    assert _review_events() == []


def test_a_viewer_cannot_bulk_review(dave, queue):
    response = signed_in(dave).post("/violations/review/", {"ids": queue[:1], "state": "confirmed"})
    assert response.status_code == 403
    assert _review_events() == []
    assert 'name="ids"' not in signed_in(dave).get("/violations/").content.decode()


def test_next_stays_on_this_site(bob, queue):
    for target in ("https://evil.example/", "//evil.example/violations/", "/runs/"):
        response = signed_in(bob).post("/violations/review/", {"ids": queue[:1], "state": "confirmed", "next": target})
        assert response["Location"] == "/violations/"


def test_counts_per_review_state_follow_the_other_filters(bob, acme, queue):
    signed_in(bob).post("/violations/review/", {"ids": queue[:2], "state": "confirmed"})
    signed_in(bob).post("/violations/review/", {"ids": queue[2:3], "state": "dismissed"})
    bulk_violations(acme, count=2, agent="other-agent", actions=("block",))
    client = signed_in(bob)
    page = client.get("/violations/?agent=bulk-agent&review_state=pending").content.decode()
    # The list loads its counts apart (htmx), or through the link without JavaScript.
    assert 'hx-get="/violations/counts/?agent=bulk-agent&amp;review_state=pending" hx-trigger="load"' in page
    assert 'href="/violations/counts/?agent=bulk-agent&amp;review_state=pending">Count by review state' in page
    for extra in ({"HTTP_HX_REQUEST": "true"}, {}):
        html = client.get("/violations/counts/?agent=bulk-agent&review_state=pending", **extra).content.decode()
        counts = dict(re.findall(r'data-state="(\w+)"[^>]*>.*?<strong>(\d+)</strong>', html))
        assert counts == {"pending": "3", "confirmed": "2", "dismissed": "1"}
        # Each count filters the list by its state, the other filters kept.
        assert 'href="/violations/?agent=bulk-agent&amp;review_state=confirmed"' in html
    assert "<html" not in client.get("/violations/counts/", HTTP_HX_REQUEST="true").content.decode()


def test_next_pending_walks_the_queue_newest_first(bob, queue):
    client = signed_in(bob)
    html = client.get("/violations/").content.decode()
    assert f'href="/violations/{queue[-1]}/" id="next-pending"' in html
    detail = client.get(f"/violations/{queue[-1]}/").content.decode()
    assert f'href="/violations/{queue[-2]}/">Next pending →' in detail


def test_rows_have_checkboxes_and_the_keyboard_script_for_reviewers(bob, queue):
    html = signed_in(bob).get("/violations/").content.decode()
    assert len(re.findall(r'<input type="checkbox" name="ids" value="\d+"', html)) == 6
    assert "js/review_queue.js" in html
    assert 'data-shortcut="c">Confirm selected' in html and 'data-shortcut="d">Dismiss selected' in html


def test_another_tenants_counts_are_not_seen(charlie, queue):
    html = signed_in(charlie).get("/violations/counts/").content.decode()
    counts = dict(re.findall(r'data-state="(\w+)"[^>]*>.*?<strong>(\d+)</strong>', html))
    assert counts == {"pending": "0", "confirmed": "0", "dismissed": "0"}
    assert signed_in(charlie).get(f"/violations/{queue[0]}/").status_code == 404
