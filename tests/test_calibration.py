"""Calibration from reviewers (issue 11 item 4): precision and the threshold reviewers' verdicts support."""

import pytest
from api_support import create_policy, ground, start_run
from django_scopes import scope, scopes_disabled

from governance.models import Evaluation
from governance.reviews import evaluation_review
from tenants.audit import Actor

pytestmark = pytest.mark.django_db
CONFIRMED = (0.3, 0.35, 0.4, 0.45, 0.48, 0.49)
DISMISSED = (0.5, 0.55, 0.6, 0.65, 0.66, 0.69)


def _violations(api, acme, scores, state, reviewer):
    for score in scores:
        run = start_run(api)
        ground(api, run, grounding_scores=[score], citations=["a"])
        with scopes_disabled():
            evaluation = Evaluation.objects.get(run_id=run, phase="mid_execution")
        assert evaluation.action == "warn"
        with scope(tenant=acme):
            evaluation_review(evaluation=evaluation, state=state, comment="", actor=Actor(user=reviewer))


@pytest.fixture
def policy(api):
    return create_policy(
        api, name="Scores", rules={"min_grounding_score": 0.7, "action_on_violation": "warn"}, agents=[]
    )


def test_the_threshold_that_keeps_confirmed_and_drops_dismissed(api, acme, policy, bob):
    _violations(api, acme, CONFIRMED, "confirmed", bob)
    _violations(api, acme, DISMISSED, "dismissed", bob)
    body = api.get(f"/api/v1/policies/{policy['id']}/calibration/").json()
    assert (body["reviewed"], body["confirmed"], body["dismissed"]) == (12, 6, 6)
    assert body["warnings"] == {"reviewed": 12, "confirmed": 6, "precision": 0.5}
    assert body["blocks"] == {"reviewed": 0, "confirmed": 0, "precision": None}
    [score] = [t for t in body["thresholds"] if t["rule"] == "min_grounding_score"]
    assert (score["current"], score["suggested"]) == (0.7, 0.5)
    assert (score["kept_confirmed"], score["dropped_dismissed"]) == (6, 6)
    assert (score["current_kept_confirmed"], score["current_dropped_dismissed"]) == (6, 0)


def test_no_suggestion_below_ten_reviewed(api, acme, policy, client, alice, bob):
    _violations(api, acme, CONFIRMED[:3], "confirmed", bob)
    _violations(api, acme, DISMISSED[:3], "dismissed", bob)
    body = api.get(f"/api/v1/policies/{policy['id']}/calibration/").json()
    assert body["reviewed"] == 6 and body["thresholds"] == [] and "at least 10" in body["message"]
    client.force_login(alice)
    assert f'hx-get="/policies/{policy["id"]}/calibration/"' in client.get(f"/policies/{policy['id']}/").text
    page = client.get(f"/policies/{policy['id']}/calibration/").text
    assert "Calibration" in page and "at least 10 reviewed violations" in page


def test_the_policy_page_shows_the_suggestion_with_try_it(api, acme, policy, client, dave, bob):
    _violations(api, acme, CONFIRMED, "confirmed", bob)
    _violations(api, acme, DISMISSED, "dismissed", bob)
    client.force_login(dave)
    page = client.get(f"/policies/{policy['id']}/calibration/").text
    assert "min_grounding_score" in page and "<strong>0.5</strong>" in page
    assert ">Try it</a>" not in page  # a viewer cannot edit


def test_try_it_prefills_the_editor(api, acme, policy, client, alice, bob):
    _violations(api, acme, CONFIRMED, "confirmed", bob)
    _violations(api, acme, DISMISSED, "dismissed", bob)
    client.force_login(alice)
    page = client.get(f"/policies/{policy['id']}/calibration/").text
    link = f"/policies/{policy['id']}/edit/?rule_min_grounding_score=0.5"
    assert link in page
    assert 'value="0.5"' in client.get(link).text


def test_another_tenants_policy_is_not_found(api, other_api, policy, client, charlie):
    client.force_login(charlie)
    assert client.get(f"/policies/{policy['id']}/calibration/").status_code == 404
    assert other_api.get(f"/api/v1/policies/{policy['id']}/calibration/").status_code == 404
    assert "/api/v1/policies/{id}/calibration/" in api.get("/api/v1/schema/?format=json").content.decode()
