"""Signed webhooks: the API and settings page, delivery to a loopback receiver that checks signatures,
retries with backoff, the delivery log, redelivery, Slack's shape, tenant isolation and bad input."""

import json

import pytest
from django.core.cache import cache
from django.test import override_settings
from django_scopes import scope, scopes_disabled
from fake_llm_server import FakeLLMServer
from pages_support import STRICT, run_through, violations_of
from test_judges_integration import UNGROUNDED, judge_rules, store_provider_secrets
from webhook_receiver import WebhookReceiver

from governance.models import Evaluation, Run
from governance.reviews import evaluation_review
from tenants.audit import Actor
from tenants.models import AuditEvent
from webhooks import delivery as delivery_module
from webhooks import payloads, services, signing
from webhooks.models import Webhook, WebhookDelivery

pytestmark = pytest.mark.django_db

# Only the webhook allow-list: the general outbound one stays empty, so webhooks must pass theirs.
LOOPBACK = override_settings(WEBHOOK_ALLOWED_HOSTS=["127.0.0.1"])


@pytest.fixture(autouse=True)
def _forget_cached_subscriptions():
    # Ids come back after a test's rollback: leave no cached subscription for the next test's tenant.
    yield
    cache.clear()


@pytest.fixture
def receiver():
    with LOOPBACK, WebhookReceiver() as server:
        yield server


@pytest.fixture
def on_commit(django_capture_on_commit_callbacks):
    """Test transactions never commit: run what would run on commit (the delivery queueing)."""

    def run(fn, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return fn(*args, **kwargs)

    return run


def create(api, url, events=("decision.block",), **extra):
    response = api.post("/api/v1/webhooks/", {"url": url, "events": list(events), **extra}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def deliveries(**filters) -> list[WebhookDelivery]:
    with scopes_disabled():
        return list(WebhookDelivery.objects.filter(**filters).order_by("id"))


def block(api, on_commit):
    run_id = api.post("/api/v1/runs/", {"agent_name": "research-agent"}, format="json").json()["id"]
    response = on_commit(api.post, f"/api/v1/runs/{run_id}/grounding/", {"grounding_scores": [0.2]}, format="json")
    assert response.json()["decision"]["action"] == "block"
    return run_id


# --- API -----------------------------------------------------------------------------------------


def test_create_shows_the_secret_once_and_never_again(api, receiver):
    created = create(api, receiver.url, events=["decision.warn", "decision.block"], description="pager")
    assert created["secret"].startswith("whsec_") and len(created["secret"]) > 40
    assert created["events"] == ["decision.block", "decision.warn"]
    assert created["enabled"] is True and created["secret_hint"].endswith(created["secret"][-4:])
    listed = api.get("/api/v1/webhooks/").json()["results"]
    assert [w["id"] for w in listed] == [created["id"]]
    detail = api.get(f"/api/v1/webhooks/{created['id']}/")
    assert detail.status_code == 200
    for body in (listed[0], detail.json()):
        assert "secret" not in body and created["secret"] not in json.dumps(body)
    with scopes_disabled():
        events = list(AuditEvent.objects.filter(action="webhooks.webhook.created"))
        stored = Webhook.objects.get()
    assert len(events) == 1 and created["secret"] not in json.dumps([events[0].before, events[0].after])
    assert created["secret"] not in stored.secret_ciphertext


def test_patch_and_delete(api, receiver):
    created = create(api, receiver.url)
    patched = api.patch(
        f"/api/v1/webhooks/{created['id']}/", {"enabled": False, "events": ["review.confirmed"]}, format="json"
    )
    assert patched.status_code == 200, patched.json()
    assert patched.json()["enabled"] is False and patched.json()["events"] == ["review.confirmed"]
    assert patched.json()["url"] == receiver.url
    assert api.delete(f"/api/v1/webhooks/{created['id']}/").status_code == 204
    assert api.get(f"/api/v1/webhooks/{created['id']}/").status_code == 404
    with scopes_disabled():
        actions = list(AuditEvent.objects.filter(action__startswith="webhooks.").values_list("action", flat=True))
    assert sorted(actions) == ["webhooks.webhook.created", "webhooks.webhook.deleted", "webhooks.webhook.updated"]


@pytest.mark.parametrize(
    "body,field",
    [
        ({"events": ["decision.block"]}, "url"),
        ({"url": "http://example.com/hook", "events": ["decision.block"]}, "url"),
        ({"url": "https://10.0.0.8/hook", "events": ["decision.block"]}, "url"),
        ({"url": "https://127.0.0.1/hook", "events": ["decision.block"]}, "url"),
        ({"url": "https://user:pw@example.com/hook", "events": ["decision.block"]}, "url"),
        ({"url": "not a url", "events": ["decision.block"]}, "url"),
        ({"url": 42, "events": ["decision.block"]}, "url"),
        ({"url": "https://example.com/hook"}, "events"),
        ({"url": "https://example.com/hook", "events": []}, "events"),
        ({"url": "https://example.com/hook", "events": ["decision.maybe"]}, "events"),
        ({"url": "https://example.com/hook", "events": "decision.block"}, "events"),
        ({"url": "https://example.com/hook", "events": ["decision.block"], "enabled": "yes"}, "enabled"),
        ({"url": "https://example.com/hook", "events": ["decision.block"], "secret": "mine"}, "secret"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(api, body, field):
    response = api.post("/api/v1/webhooks/", body, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()
    with scopes_disabled():
        assert not Webhook.objects.exists()


def test_bad_patch_is_a_400_naming_the_field(api, receiver):
    created = create(api, receiver.url)
    for body, field in (({"url": "ftp://x"}, "url"), ({"events": ["nope"]}, "events"), ({"id": 3}, "id")):
        response = api.patch(f"/api/v1/webhooks/{created['id']}/", body, format="json")
        assert response.status_code == 400 and field in response.json(), response.json()


def test_another_tenants_webhook_is_404(api, other_api, make_policy, receiver, on_commit):
    make_policy(rules=STRICT)
    created = create(api, receiver.url)
    base = f"/api/v1/webhooks/{created['id']}/"
    assert other_api.get(base).status_code == 404
    assert other_api.patch(base, {"enabled": False}, format="json").status_code == 404
    assert other_api.delete(base).status_code == 404
    assert other_api.get(base + "deliveries/").status_code == 404
    assert other_api.get("/api/v1/webhooks/").json()["results"] == []
    block(api, on_commit)
    delivery = deliveries()[0]
    assert other_api.post(f"{base}deliveries/{delivery.pk}/redeliver/").status_code == 404
    assert api.get(base).json()["enabled"] is True


def test_endpoints_are_in_the_openapi_schema(api):
    paths = api.get("/api/v1/schema/?format=json", HTTP_ACCEPT="application/json")
    text = paths.content.decode()
    for path in ("/api/v1/webhooks/", "/api/v1/webhooks/{id}/", "/api/v1/webhooks/{id}/deliveries/"):
        assert path in text


# --- delivery ------------------------------------------------------------------------------------


def test_a_block_is_delivered_signed_and_logged(api, make_policy, receiver, on_commit):
    make_policy(rules=STRICT)
    created = create(api, receiver.url)
    run_id = block(api, on_commit)

    assert len(receiver.received) == 1
    got = receiver.received[0]
    assert got.headers["X-Groundrule-Event"] == "decision.block"
    assert got.headers["Content-Type"] == "application/json"
    assert signing.verify(created["secret"], got.headers["X-Groundrule-Signature"], got.body)
    assert not signing.verify("whsec_wrong", got.headers["X-Groundrule-Signature"], got.body)
    assert not signing.verify(created["secret"], got.headers["X-Groundrule-Signature"], got.body + b" ")
    t, v1 = got.headers["X-Groundrule-Signature"].split(",")
    assert t.startswith("t=") and v1.startswith("v1=") and len(v1) == 3 + 64
    body = json.loads(got.body)
    assert body["event"] == "decision.block" and body["tenant"] == "acme"
    assert body["id"] == got.headers["X-Groundrule-Delivery"]
    assert body["data"]["run_id"] == run_id and body["data"]["action"] == "block"
    assert body["data"]["phase"] == "mid_execution" and body["data"]["evaluations"]

    (logged,) = deliveries()
    assert str(logged.delivery_id) == got.headers["X-Groundrule-Delivery"]
    assert logged.status == "succeeded" and logged.response_code == 200 and logged.attempts == 1
    assert logged.latency_ms is not None
    log = api.get(f"/api/v1/webhooks/{created['id']}/deliveries/").json()["results"]
    assert [d["status"] for d in log] == ["succeeded"]


def test_only_subscribed_and_enabled_webhooks_get_the_event(api, make_policy, receiver, on_commit):
    make_policy(rules=STRICT)
    create(api, receiver.url, events=["decision.warn"])
    disabled = create(api, receiver.url + "?disabled", enabled=False)
    block(api, on_commit)
    assert receiver.received == [] and deliveries() == []
    api.patch(f"/api/v1/webhooks/{disabled['id']}/", {"enabled": True}, format="json")
    block(api, on_commit)
    assert len(receiver.received) == 1 and receiver.received[0].path == "/hook?disabled"


def test_failures_are_retried_until_the_receiver_answers(api, make_policy, receiver, on_commit):
    make_policy(rules=STRICT)
    create(api, receiver.url)
    receiver.statuses = [500, 503]
    block(api, on_commit)
    assert len(receiver.received) == 3
    # The same delivery each time: the receiver can de-duplicate on its id.
    assert len({r.headers["X-Groundrule-Delivery"] for r in receiver.received}) == 1
    (logged,) = deliveries()
    assert logged.status == "succeeded" and logged.attempts == 3 and logged.response_code == 200


def test_a_receiver_that_never_answers_fails_after_the_24h_schedule(api, make_policy, receiver, on_commit):
    make_policy(rules=STRICT)
    create(api, receiver.url)
    receiver.default_status = 500
    block(api, on_commit)
    (logged,) = deliveries()
    assert logged.status == "failed" and logged.response_code == 500
    assert logged.attempts == delivery_module.MAX_ATTEMPTS == len(receiver.received)
    assert logged.last_error == "HTTP 500"


def test_backoff_is_exponential_and_spans_24_hours():
    waits = [delivery_module.backoff_seconds(n) for n in range(1, delivery_module.MAX_ATTEMPTS)]
    assert waits[:4] == [30, 60, 120, 240]
    assert all(b >= a for a, b in zip(waits, waits[1:]))
    total = sum(waits)
    assert 20 * 3600 < total <= 24 * 3600
    assert total + delivery_module.backoff_seconds(delivery_module.MAX_ATTEMPTS) > 24 * 3600


def test_a_url_the_guard_refuses_at_delivery_fails_without_retrying(api, make_policy, receiver, on_commit):
    make_policy(rules=STRICT)
    create(api, receiver.url)
    with override_settings(WEBHOOK_ALLOWED_HOSTS=[], OUTBOUND_ALLOWED_HOSTS=[]):
        block(api, on_commit)
    (logged,) = deliveries()
    assert logged.status == "failed" and logged.attempts == 1 and logged.last_error.startswith("refused:")
    assert receiver.received == []


def test_redeliver_sends_the_event_again_under_a_new_id(api, make_policy, receiver, on_commit):
    make_policy(rules=STRICT)
    created = create(api, receiver.url)
    block(api, on_commit)
    first = deliveries()[0]
    response = on_commit(api.post, f"/api/v1/webhooks/{created['id']}/deliveries/{first.pk}/redeliver/")
    assert response.status_code == 202, response.json()
    assert len(receiver.received) == 2
    ids = [r.headers["X-Groundrule-Delivery"] for r in receiver.received]
    assert ids[0] != ids[1]
    assert json.loads(receiver.received[1].body)["data"] == json.loads(receiver.received[0].body)["data"]
    again = deliveries()[1]
    assert again.redelivery_of_id == first.pk and again.status == "succeeded"


def test_review_confirmed_and_dismissed_are_delivered(acme, alice, make_policy, receiver, on_commit):
    make_policy(rules=STRICT)
    _, secret = services.webhook_create(
        tenant=acme, url=receiver.url, actor=Actor.system("tests"), events=["review.confirmed", "review.dismissed"]
    )
    run = run_through(acme, scores=(0.2,))
    violation = violations_of(run)[0]
    with scope(tenant=acme):  # as on the violations page
        on_commit(evaluation_review, evaluation=violation, state="confirmed", comment="real", actor=Actor(user=alice))
        on_commit(evaluation_review, evaluation=violation, state="dismissed", actor=Actor(user=alice))
    events = [r.headers["X-Groundrule-Event"] for r in receiver.received]
    assert events == ["review.confirmed", "review.dismissed"]
    body = json.loads(receiver.received[0].body)
    assert body["data"]["evaluation_id"] == violation.pk and body["data"]["reviewed_by"] == "alice"
    assert body["data"]["review_comment"] == "real"
    assert all(signing.verify(secret, r.headers["X-Groundrule-Signature"], r.body) for r in receiver.received)


def test_nothing_is_delivered_when_the_transaction_rolls_back(acme, receiver, django_capture_on_commit_callbacks):
    services.webhook_create(tenant=acme, url=receiver.url, actor=Actor.system("tests"), events=["score_audit.alert"])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.webhook_emit(tenant=acme, event="score_audit.alert", data={"message": "drift"})
    assert len(callbacks) == 1 and receiver.received == []  # queued only for the commit


def test_slack_incoming_webhooks_get_slacks_shape():
    body = payloads.envelope(
        delivery_id="d1",
        event="decision.block",
        tenant_slug="acme",
        created_at="now",
        data={
            "action": "block",
            "phase": "mid_execution",
            "agent_name": "research-agent",
            "run_id": 7,
            "reason": "Grounding score (0.2) below minimum (0.8)",
        },
    )
    slack = payloads.for_url("https://hooks.slack.com/services/T000/B000/XXXX", body)
    assert set(slack) == {"text", "blocks"}
    assert "BLOCK" in slack["text"] and "research-agent" in slack["text"] and "run 7" in slack["text"]
    assert payloads.for_url("https://example.com/services/x", body) == body
    assert payloads.for_url("https://hooks.slack.com.evil.example/services/x", body) == body


# --- settings page -------------------------------------------------------------------------------


def test_admin_adds_a_webhook_on_the_page_and_sees_the_secret_once(client, alice, acme, receiver):
    client.force_login(alice)
    response = client.post(
        "/settings/webhooks/",
        {"url": receiver.url, "events": ["decision.block"], "enabled": "on", "description": "ops"},
    )
    assert response.status_code == 200
    with scopes_disabled():
        webhook = Webhook.objects.get()
    secret = webhook.reveal_secret()
    assert secret in response.text and "no-store" in response["Cache-Control"]
    again = client.get("/settings/webhooks/")
    assert secret not in again.text and receiver.url in again.text
    detail = client.get(f"/settings/webhooks/{webhook.pk}/")
    assert detail.status_code == 200 and secret not in detail.text and "Delivery log" in detail.text


def test_the_page_names_the_bad_field(client, alice, acme):
    client.force_login(alice)
    response = client.post("/settings/webhooks/", {"url": "http://example.com/x", "events": ["decision.block"]})
    assert response.status_code == 400 and "Must be an https:// URL" in response.text
    with scopes_disabled():
        assert not Webhook.objects.exists()


def test_page_edit_log_and_redeliver(client, alice, acme, api, make_policy, receiver, on_commit):
    make_policy(rules=STRICT)
    created = create(api, receiver.url)
    block(api, on_commit)
    client.force_login(alice)
    page = client.get(f"/settings/webhooks/{created['id']}/")
    assert "succeeded" in page.text and "decision.block" in page.text
    first = deliveries()[0]
    response = on_commit(client.post, f"/settings/webhooks/{created['id']}/deliveries/{first.pk}/redeliver/")
    assert response.status_code == 302 and len(receiver.received) == 2
    saved = client.post(f"/settings/webhooks/{created['id']}/", {"url": receiver.url, "events": ["decision.warn"]})
    assert saved.status_code == 302
    with scopes_disabled():
        webhook = Webhook.objects.get()
    assert webhook.events == ["decision.warn"] and webhook.enabled is False
    assert client.post(f"/settings/webhooks/{created['id']}/delete/").status_code == 302
    with scopes_disabled():
        assert not Webhook.objects.exists()


@pytest.mark.parametrize("who", ["bob", "dave"])
def test_only_admins_see_the_webhook_pages(client, who, request, acme):
    client.force_login(request.getfixturevalue(who))
    assert client.get("/settings/webhooks/").status_code == 403
    assert client.post("/settings/webhooks/", {"url": "https://example.com/x"}).status_code == 403


def test_another_tenants_webhook_page_is_404(client, charlie, api, receiver):
    created = create(api, receiver.url)
    client.force_login(charlie)
    assert client.get(f"/settings/webhooks/{created['id']}/").status_code == 404
    assert client.post(f"/settings/webhooks/{created['id']}/delete/").status_code == 404
    assert client.post(f"/settings/webhooks/{created['id']}/deliveries/1/redeliver/").status_code == 404


def test_a_new_webhook_hears_the_very_next_event(api, make_policy, receiver, on_commit):
    # The subscription cache is warm (and empty) from the first decision; creating clears it.
    make_policy(rules=STRICT)
    block(api, on_commit)
    create(api, receiver.url)
    block(api, on_commit)
    assert len(receiver.received) == 1


def test_a_background_judges_warning_is_delivered_when_it_arrives(
    api, acme, make_policy, receiver, on_commit, settings
):
    # The LLM judge at after_workflow runs in Celery (eager here): its warn joins the decision later.
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]  # the fake provider listens on loopback
    with FakeLLMServer() as llm_server:
        store_provider_secrets(acme, llm_server)
        make_policy(rules=judge_rules(llm_grounding_phase="after_workflow", action_on_violation="warn"))
        created = create(api, receiver.url, events=["decision.warn"])
        run_id = api.post("/api/v1/runs/", {"agent_name": "research-agent"}, format="json").json()["id"]
        done = on_commit(api.post, f"/api/v1/runs/{run_id}/complete/", {"output": UNGROUNDED}, format="json")
        assert done.json()["decision"]["action"] == "allow"  # the agent did not wait for the judge
    (got,) = receiver.received
    body = json.loads(got.body)
    assert got.headers["X-Groundrule-Event"] == "decision.warn" and body["data"]["late"] is True
    assert body["data"]["run_id"] == run_id and body["data"]["phase"] == "after_workflow"
    assert body["data"]["reason"] == "LLM judge score (0.2) below threshold (0.7)"
    assert signing.verify(created["secret"], got.headers["X-Groundrule-Signature"], got.body)


def test_a_shadow_policys_background_judge_sends_no_webhook(api, acme, make_policy, receiver, on_commit, settings):
    # Shadow verdicts never act: a late block from a shadow policy's judge is stored, not announced.
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    with FakeLLMServer() as llm_server:
        store_provider_secrets(acme, llm_server)
        policy = make_policy(rules=judge_rules(llm_grounding_phase="after_workflow", action_on_violation="block"))
        assert api.patch(f"/api/v1/policies/{policy.pk}/", {"mode": "shadow"}, format="json").status_code == 200
        create(api, receiver.url, events=["decision.warn", "decision.block"])
        run_id = api.post("/api/v1/runs/", {"agent_name": "research-agent"}, format="json").json()["id"]
        done = on_commit(api.post, f"/api/v1/runs/{run_id}/complete/", {"output": UNGROUNDED}, format="json")
        assert done.json()["decision"]["action"] == "allow"
    with scopes_disabled():
        late = Evaluation.objects.get(run_id=run_id, source="llm_judge")
        assert (late.shadow, late.action) == (True, "block")
        assert Run.objects.get(pk=run_id).final_action != "block"
    assert receiver.received == []
