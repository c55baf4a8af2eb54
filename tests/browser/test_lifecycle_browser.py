"""Policy lifecycle in the browser (issue 11): an admin tries a stricter version on past runs, saves it
in shadow mode, sees its verdicts apart on a run, downloads the evidence, and rolls the policy back."""

import json

import pytest

pytest.importorskip("playwright")
from django.contrib.auth import get_user_model
from django_scopes import scope, scopes_disabled
from playwright.sync_api import expect

from governance import services as run_services
from governance.models import Evaluation
from governance.reviews import evaluation_review
from policies import services as policy_services
from policies.models import Policy
from tenants import services as tenant_services
from tenants.audit import Actor
from tenants.models import Role

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"
SYSTEM = Actor.system("browser-tests")


def _runs(tenant, scores):
    ids = []
    with scope(tenant=tenant):
        for score in scores:
            run, _ = run_services.run_start(tenant=tenant, agent_name="research-agent")
            run_services.run_record_grounding(
                tenant=tenant, run_id=run.pk, grounding_scores=[score], citations=["doc-1"]
            )
            run_services.run_complete(tenant=tenant, run_id=run.pk, output="An answer.")
            ids.append(run.pk)
    return ids


@pytest.fixture
def world(live_server):
    with scopes_disabled():
        acme = tenant_services.tenant_create(slug="acme", name="Acme Research", actor=SYSTEM)
        alice = get_user_model().objects.create_user("alice", "alice@example.com", PASSWORD)
        tenant_services.membership_set(tenant=acme, user=alice, role=Role.ADMIN, actor=SYSTEM)
        policy = policy_services.policy_create(
            tenant=acme,
            actor=SYSTEM,
            name="Research grounding",
            category="grounding",
            rules={"min_grounding_score": 0.5},
        )
    _runs(acme, [0.6, 0.7, 0.95])
    return {"tenant": acme, "policy": policy}


def test_try_save_in_shadow_see_it_apart_download_evidence_and_roll_back(browser_page, sign_in, screenshot, world):
    page, policy, tenant = browser_page, world["policy"], world["tenant"]
    sign_in(page, "alice", PASSWORD, next_path=f"/policies/{policy.pk}/edit/")

    page.get_by_label("Minimum grounding score").fill("0.8")
    page.get_by_role("button", name="Try on past runs").click()
    result = page.get_by_test_id("replay-result")
    expect(result.get_by_test_id("changed-runs")).to_have_text("2")
    expect(result).to_contain_text("3 grounding reports in 3 runs")
    screenshot(page, "lifecycle-try-on-past-runs")

    result.get_by_role("button", name="Save in shadow mode").click()
    page.wait_for_url(f"**/policies/{policy.pk}/")
    expect(page.get_by_text("Shadow", exact=True)).to_be_visible()
    with scopes_disabled():
        saved = Policy.objects.get(pk=policy.pk)
    assert (saved.mode, saved.version, saved.rules["min_grounding_score"]) == ("shadow", 2, 0.8)

    run_id = _runs(tenant, [0.6])[0]
    page.goto(f"/runs/{run_id}/")
    shadow = page.locator("section.gr-shadow")
    expect(shadow.get_by_role("heading", name="Shadow policies")).to_be_visible()
    expect(shadow).to_contain_text("Grounding score (0.6) below threshold (0.8)")
    expect(page.locator(".gr-head-badges")).to_contain_text("allow")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download evidence").click()
    pack = json.loads(open(download.value.path()).read())
    assert pack["run"]["id"] == run_id and any(e["shadow"] for e in pack["evaluations"])

    page.goto(f"/policies/{policy.pk}/history/")
    page.get_by_role("button", name="Roll back to v1").click()
    expect(page.get_by_text("rolled back to v1")).to_be_visible()
    screenshot(page, "lifecycle-history-rollback")
    with scopes_disabled():
        rolled = Policy.objects.get(pk=policy.pk)
    assert (rolled.mode, rolled.version, rolled.rules) == ("enforce", 3, {"min_grounding_score": 0.5})


def test_the_policy_page_loads_the_calibration_panel(browser_page, sign_in, world):
    page, policy = browser_page, world["policy"]
    sign_in(page, "alice", PASSWORD, next_path=f"/policies/{policy.pk}/")
    panel = page.get_by_test_id("calibration")
    expect(panel.get_by_role("heading", name="Calibration from reviewers")).to_be_visible()
    expect(panel).to_contain_text("Suggestions need at least 10 reviewed violations")


def test_try_it_on_a_calibration_suggestion_replays_it_at_once(browser_page, sign_in, world):
    page, policy, tenant = browser_page, world["policy"], world["tenant"]
    reviewer = get_user_model().objects.get(username="alice")
    for scores, state in (([0.1, 0.15, 0.2, 0.25, 0.3], "confirmed"), ([0.4, 0.42, 0.44, 0.46, 0.48], "dismissed")):
        for run_id in _runs(tenant, scores):
            with scope(tenant=tenant):
                evaluation = Evaluation.objects.get(run_id=run_id, phase="mid_execution")
                evaluation_review(evaluation=evaluation, state=state, comment="", actor=Actor(user=reviewer))
    sign_in(page, "alice", PASSWORD, next_path=f"/policies/{policy.pk}/")
    panel = page.get_by_test_id("calibration")
    expect(panel.get_by_role("row", name="min_grounding_score")).to_contain_text("0.4")
    panel.get_by_role("link", name="Try it").first.click()
    expect(page.locator("#id_rule_min_grounding_score")).to_have_value("0.4")
    # The replay ran on opening: the five dismissed runs (0.4 to 0.48) now pass.
    expect(page.get_by_test_id("changed-runs")).to_have_text("5")
