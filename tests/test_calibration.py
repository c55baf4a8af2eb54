"""Calibration from reviewers (issue 11 item 4): precision and the threshold reviewers' verdicts support."""

import pytest
from api_support import complete, create_policy, ground, start_run
from django_scopes import scope, scopes_disabled
from fake_llm_server import FakeLLMServer
from test_judges_integration import judge_rules, report, start, store_provider_secrets

from governance.models import Evaluation
from governance.reviews import evaluation_review
from policies.calibration import Reviewed, calibrate
from policies.categories import get_category
from policies.engine import RunState
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
    link = f"/policies/{policy['id']}/edit/?rule_min_grounding_score=0.5&try=1"
    assert link.replace("&", "&amp;") in page
    editor = client.get(link).text
    assert 'value="0.5"' in editor and 'hx-trigger="click, load"' in editor  # the replay runs on opening
    assert 'hx-trigger="click"' in client.get(f"/policies/{policy['id']}/edit/").text


def test_another_tenants_policy_is_not_found(api, other_api, policy, client, charlie):
    client.force_login(charlie)
    assert client.get(f"/policies/{policy['id']}/calibration/").status_code == 404
    assert other_api.get(f"/api/v1/policies/{policy['id']}/calibration/").status_code == 404
    assert "/api/v1/policies/{id}/calibration/" in api.get("/api/v1/schema/?format=json").content.decode()


# --- every numeric threshold: counts, the judges, the verifier ----------------------------------------


def _review(acme, evaluation, state, reviewer):
    with scope(tenant=acme):
        evaluation_review(evaluation=evaluation, state=state, comment="", actor=Actor(user=reviewer))


def _threshold(body, rule):
    return next(t for t in body["thresholds"] if t["rule"] == rule)


def test_a_count_threshold_is_calibrated_on_whole_numbers(api, acme, bob):
    policy = create_policy(api, name="Citations", rules={"min_grounding_score": None, "min_citations": 3}, agents=[])
    for citations, state in (([], "confirmed"),) * 5 + ((["a", "b"], "dismissed"),) * 5:
        run = start_run(api)
        ground(api, run, grounding_scores=[0.9], citations=citations)
        complete(api, run, output="Answer")
        with scopes_disabled():
            evaluation = Evaluation.objects.get(run_id=run, phase="after_workflow")
        assert evaluation.action == "warn"
        _review(acme, evaluation, state, bob)
    body = api.get(f"/api/v1/policies/{policy['id']}/calibration/").json()
    rule = _threshold(body, "min_citations")
    # 2 still flags no citations and lets two through; of 1 and 2, the nearer to 3.
    assert (rule["source"], rule["current"], rule["suggested"]) == ("engine", 3, 2)
    assert (rule["kept_confirmed"], rule["dropped_dismissed"]) == (5, 5)
    assert (rule["current_kept_confirmed"], rule["current_dropped_dismissed"]) == (5, 0)
    assert {"rule": "min_grounding_score"} not in [{"rule": t["rule"]} for t in body["thresholds"]]  # switched off


def test_the_llm_judge_threshold_is_calibrated_on_its_stored_scores(api, acme, make_policy, bob, settings):
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    with FakeLLMServer() as server:
        store_provider_secrets(acme, server)
        policy = make_policy(rules=judge_rules(min_grounding_score=None))
        for n, (score, state) in enumerate(
            [(s, "confirmed") for s in CONFIRMED] + [(s, "dismissed") for s in DISMISSED]
        ):
            server.reply_with(f"SCORE: {score}")
            run = start(api)
            assert report(api, run, f"Answer number {n}.")["action"] == "block"
            with scopes_disabled():
                evaluation = Evaluation.objects.get(run_id=run, source="llm_judge")
            _review(acme, evaluation, state, bob)
    body = api.get(f"/api/v1/policies/{policy.pk}/calibration/").json()
    rule = _threshold(body, "llm_grounding_threshold")
    assert (rule["source"], rule["current"], rule["suggested"]) == ("llm_judge", 0.7, 0.5)
    assert (rule["kept_confirmed"], rule["dropped_dismissed"]) == (6, 6)
    assert body["blocks"] == {"reviewed": 12, "confirmed": 6, "precision": 0.5}


VERIFIER_RULES = {
    "min_grounding_score": None,
    "min_citations": 0,
    "nli_check": True,
    "nli_phase": "mid_execution",
    "contradiction_action": "block",
    "unverifiable_action": "warn",
    "max_unverifiable_ratio": 0.0,
}
SOURCES = [{"id": "fed", "text": "The Federal Reserve raised interest rates by 0.25 percent in July 2023."}]
CONTRADICTIONS = [f"The Federal Reserve raised interest rates by {n} percent in July 2023." for n in (1, 2, 3, 4, 5)]
UNVERIFIABLE = [
    "The Federal Reserve raised interest rates by 0.25 percent in July 2023. The decision surprised traders.",
    "The Federal Reserve raised interest rates by 0.25 percent in July 2023. Powell spoke in Denver.",
    "The Federal Reserve raised interest rates by 0.25 percent in July 2023. Mortgage demand fell sharply.",
    "The Federal Reserve raised interest rates by 0.25 percent in July 2023. The vote was unanimous.",
    "The Federal Reserve raised interest rates by 0.25 percent in July 2023. Markets rallied the next week.",
]


def test_the_verifier_thresholds_are_calibrated_on_stored_claim_probabilities(api, acme, make_policy, bob):
    policy = make_policy(rules=VERIFIER_RULES)
    for outputs, state in ((CONTRADICTIONS, "confirmed"), (UNVERIFIABLE, "dismissed")):
        for output in outputs:
            run = start_run(api)
            ground(api, run, grounding_scores=[0.9], sources=SOURCES, citations=["fed"], output=output)
            with scopes_disabled():
                evaluation = Evaluation.objects.get(run_id=run, source="verifier")
            assert evaluation.action != "allow", evaluation.reason
            _review(acme, evaluation, state, bob)
    body = api.get(f"/api/v1/policies/{policy.pk}/calibration/").json()
    rules = {t["rule"]: t for t in body["thresholds"]}
    assert {"entailment_threshold", "contradiction_threshold", "max_unverifiable_ratio"} <= set(rules)
    assert all(rules[name]["source"] == "verifier" for name in ("entailment_threshold", "max_unverifiable_ratio"))
    ratio = rules["max_unverifiable_ratio"]
    # Raising the allowed share of unverifiable claims drops the dismissed, keeps the contradictions.
    assert (ratio["kept_confirmed"], ratio["dropped_dismissed"]) == (5, 5) and ratio["suggested"] >= 0.5
    assert (ratio["current_kept_confirmed"], ratio["current_dropped_dismissed"]) == (5, 0)


def test_what_is_not_calibrated_is_listed_with_the_reason(api, acme, policy, bob):
    api.patch(f"/api/v1/policies/{policy['id']}/", {"rules": {"score_audit_rate": 0.5}}, format="json")
    _violations(api, acme, CONFIRMED, "confirmed", bob)
    _violations(api, acme, DISMISSED, "dismissed", bob)
    body = api.get(f"/api/v1/policies/{policy['id']}/calibration/").json()
    reasons = {item["rule"]: item["reason"] for item in body["not_calibrated"]}
    assert "sampling rate" in reasons["score_audit_rate"]
    assert reasons["min_citations"] == "No reviewed violation comes from after_workflow."


def _reviewed(confirmed, phase, **state):
    return Reviewed(confirmed=confirmed, action="warn", phase=phase, source="engine", state=RunState(**state))


def test_inflation_and_abstention_thresholds_are_calibrated_on_the_rebuilt_state():
    rules = get_category("grounding").effective_rules(
        {"min_grounding_score": None, "min_citations": 0, "max_score_inflation": 0.1, "abstention_threshold": 0.9}
    )
    reviewed = [
        *(_reviewed(True, "mid_execution", score_inflation=0.5, score_audit_samples=40) for _ in range(3)),
        *(_reviewed(False, "mid_execution", score_inflation=0.2, score_audit_samples=40) for _ in range(3)),
        *(_reviewed(True, "after_workflow", output_confidence=0.2) for _ in range(3)),
        *(_reviewed(False, "after_workflow", output_confidence=0.7) for _ in range(3)),
    ]
    body = calibrate(category_name="grounding", rules=rules, reviewed=reviewed)
    found = {t["rule"]: t for t in body["thresholds"]}
    inflation, abstention = found["max_score_inflation"], found["abstention_threshold"]
    assert (inflation["suggested"], inflation["kept_confirmed"], inflation["dropped_dismissed"]) == (0.2, 3, 3)
    assert (abstention["suggested"], abstention["kept_confirmed"], abstention["dropped_dismissed"]) == (0.7, 3, 3)
    samples = found["score_audit_min_samples"]
    assert samples["current"] == 20 and samples["kept_confirmed"] == 3  # 40 samples clear every value tried up to 41
