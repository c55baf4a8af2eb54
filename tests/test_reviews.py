"""Reviewing a violation: the state, who and when, the audit trail, and where the review shows."""

import pytest
from django.core.exceptions import ValidationError
from django_scopes import scope, scopes_disabled
from pages_support import STRICT, run_through, signed_in, violations_of

from governance.models import Evaluation
from governance.reviews import evaluation_review
from tenants.audit import Actor
from tenants.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def blocked_run(acme, make_policy):
    make_policy(name="Strict Research Grounding", rules=STRICT, agents=["research-*"])
    return run_through(acme, scores=(0.9, 0.42))


@pytest.fixture
def violation(blocked_run):
    return violations_of(blocked_run)[0]


def _review_events():
    with scopes_disabled():
        return list(AuditEvent.objects.filter(action__startswith="governance.violation.").order_by("id"))


def test_confirming_records_state_reviewer_time_and_comment(acme, bob, violation):
    with scope(tenant=acme):
        reviewed = evaluation_review(
            evaluation=violation, state="confirmed", comment="  The score was low.  ", actor=Actor(user=bob)
        )
    assert reviewed.review_state == "confirmed"
    assert reviewed.reviewed_by == bob and reviewed.reviewed_at is not None
    assert reviewed.review_comment == "The score was low."
    with scopes_disabled():
        stored = Evaluation.objects.get(pk=violation.pk)
    assert (stored.review_state, stored.reviewed_by_id, stored.review_comment) == (
        "confirmed",
        bob.pk,
        "The score was low.",
    )


def test_each_review_writes_an_audit_event_with_before_and_after(acme, alice, bob, violation):
    with scope(tenant=acme):
        evaluation_review(evaluation=violation, state="confirmed", comment="Real", actor=Actor(user=bob))
        evaluation_review(
            evaluation=violation, state="dismissed", comment="Second look: test traffic", actor=Actor(user=alice)
        )
    first, second = _review_events()
    assert first.action == "governance.violation.confirmed"
    assert (first.actor_label, first.object_type, first.object_id) == (
        "bob",
        "governance.evaluation",
        str(violation.pk),
    )
    assert first.before == {"review_state": "pending", "reviewed_by": None, "reviewed_at": None, "review_comment": ""}
    assert first.after["review_state"] == "confirmed" and first.after["review_comment"] == "Real"
    assert first.after["run_id"] == violation.run_id and first.after["policy_name"] == "Strict Research Grounding"
    assert second.action == "governance.violation.dismissed" and second.actor_label == "alice"
    assert second.before["review_state"] == "confirmed" and second.before["reviewed_by"] == "bob"
    assert second.after["review_state"] == "dismissed"
    assert second.after["review_comment"] == "Second look: test traffic"


def test_allow_evaluations_cannot_be_reviewed(acme, bob, make_policy):
    make_policy(name="Strict Research Grounding", rules=STRICT, agents=["research-*"])
    run = run_through(acme, scores=(0.95,), citations=["a", "b"], confidence=0.9)
    with scopes_disabled():
        allow = Evaluation.objects.filter(run=run).first()
    with scope(tenant=acme), pytest.raises(ValidationError, match="Only warn and block"):
        evaluation_review(evaluation=allow, state="confirmed", comment="", actor=Actor(user=bob))
    assert _review_events() == []


@pytest.mark.parametrize("state", ["pending", "CONFIRMED", "", "approved"])
def test_only_confirmed_or_dismissed_are_review_states(acme, bob, violation, state):
    with scope(tenant=acme), pytest.raises(ValidationError):
        evaluation_review(evaluation=violation, state=state, comment="", actor=Actor(user=bob))
    assert _review_events() == []


def test_a_review_needs_a_person(acme, violation):
    with scope(tenant=acme), pytest.raises(ValidationError):
        evaluation_review(evaluation=violation, state="confirmed", comment="", actor=Actor.system())


def test_review_from_the_page_is_audited_with_the_request_id(bob, violation):
    response = signed_in(bob).post(
        f"/violations/{violation.pk}/", {"state": "confirmed", "comment": "ok"}, HTTP_X_REQUEST_ID="review-req-1"
    )
    assert response.status_code == 302
    (event,) = _review_events()
    assert event.request_id == "review-req-1" and event.actor_id == bob.pk


def test_review_shows_on_the_runs_governance_tab(bob, dave, blocked_run, violation):
    signed_in(bob).post(f"/violations/{violation.pk}/", {"state": "confirmed", "comment": "Fabricated figure."})
    html = signed_in(dave).get(f"/runs/{blocked_run.pk}/?tab=governance").content.decode()
    card = html[html.index(f'id="evaluation-{violation.pk}"') :]
    card = card[: card.index('<span class="gr-source')]  # the row up to its source cell: its details
    assert "badge-confirmed" in card and "by bob" in card and "Fabricated figure." in card


def test_re_review_is_allowed_and_shown(alice, bob, blocked_run, violation):
    signed_in(bob).post(f"/violations/{violation.pk}/", {"state": "confirmed", "comment": "first"})
    signed_in(alice).post(f"/violations/{violation.pk}/", {"state": "dismissed", "comment": "second"})
    html = signed_in(bob).get(f"/violations/{violation.pk}/").content.decode()
    assert "badge-dismissed" in html and "by alice" in html and "second" in html
    assert [e.action for e in _review_events()] == ["governance.violation.confirmed", "governance.violation.dismissed"]
