"""Stored XSS, tried in a real browser: every text a tenant's agents or users can supply is a script
payload, every page that shows it is visited, and no script runs.

What an agent sends (agent and workflow names, claims, citations, sources, retrieval results with
their titles and URLs, span names, the run's output and error) goes through the API, as an agent
would send it; the policy name through the service a form uses; the review comment is typed into the
review form. On each page: `window.__xss` stays undefined, no dialog opens, the browser reports no
error (a CSP refusal of an injected inline script would be one: the page fixture fails on it), and
no `javascript:` URL is a link or a source. The payloads appear on the page as text.
"""

import re
from datetime import UTC, datetime, timedelta

import httpx
import pytest

pytest.importorskip("playwright")
from django.contrib.auth import get_user_model
from django_scopes import scopes_disabled

from governance.models import Evaluation, Run
from policies import services as policy_services
from tenants import services as tenant_services
from tenants.audit import Actor
from tenants.models import Role

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"
SYSTEM = Actor.system("browser-tests")

SCRIPT = "<script>window.__xss=1</script>"
ATTRIBUTE = '"><img src=x onerror=window.__xss=1>'
SVG = "'><svg onload=window.__xss=1>"
JS_URL = "javascript:window.__xss=1"


def hostile(label: str) -> str:
    """A payload that breaks out of text, of a double- and a single-quoted attribute, labelled."""
    return f"{label} {SCRIPT}{ATTRIBUTE}{SVG}"


AGENT = hostile("agent")
POLICY = hostile("policy")
SPAN = hostile("span")
COMMENT = hostile("comment")
STRICT = {"min_grounding_score": 0.7, "min_citations": 1, "action_on_violation": "block"}


@pytest.fixture
def hostile_world(live_server):
    with scopes_disabled():
        acme = tenant_services.tenant_create(slug="acme", name="Acme", actor=SYSTEM)
        acme.score_audit_rate = 1.0  # every report audited: the score audit page shows the agent
        acme.save(update_fields=["score_audit_rate"])
        alice = get_user_model().objects.create_user("alice", "alice@example.com", PASSWORD)
        tenant_services.membership_set(tenant=acme, user=alice, role=Role.ADMIN, actor=SYSTEM)
        policy = policy_services.policy_create(
            tenant=acme,
            actor=SYSTEM,
            name=POLICY,
            description=hostile("description"),
            category="grounding",
            rules=STRICT,
            scope={"agents": []},
            enabled=True,
        )
        _, key = tenant_services.api_key_create(tenant=acme, name=hostile("key"), actor=SYSTEM)
    run_id = _hostile_run(live_server.url, key)
    with scopes_disabled():
        violation = Evaluation.objects.filter(run_id=run_id, action="block").first()
        assert violation is not None, "the hostile report should have been blocked"
        assert Run.objects.get(pk=run_id).agent_name == AGENT  # stored as sent
    return {"run": run_id, "policy": policy.pk, "violation": violation.pk}


def _hostile_run(url: str, key: str) -> int:
    t0 = datetime.now(UTC)
    result = {
        "source_id": hostile("result-id"),
        "source_type": hostile("result-type"),
        "relevance": 0.6,
        "text": hostile("result-text"),
        "metadata": {"title": hostile("source-title"), "url": JS_URL, "link": "JavaScript:alert(1)"},
    }
    provenance = {
        "intent": {"text_queries": [hostile("query")], "scope": hostile("scope"), "filters": {"f": JS_URL}},
        "results_by_source": {hostile("source-name"): [result]},
    }
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:

        def post(path: str, body: dict) -> dict:
            response = http.post(path, json=body)
            assert response.status_code in (200, 201), (path, response.status_code, response.text)
            return response.json()

        run = post(
            "/api/v1/runs/",
            {
                "agent_name": AGENT,
                "workflow_name": hostile("workflow"),
                "input": {"question": hostile("input"), "url": JS_URL},
                "metadata": {"title": hostile("run-title"), "url": JS_URL},
            },
        )
        spans = f"/api/v1/runs/{run['id']}/spans/"
        post(
            spans,
            {
                "kind": "retrieval",
                "name": SPAN,
                "input": {"query": hostile("span-input")},
                "attributes": {"provenance": provenance, "url": JS_URL},
                "started_at": t0.isoformat(),
                "ended_at": (t0 + timedelta(milliseconds=40)).isoformat(),
            },
        )
        post(spans, {"kind": "tool", "name": hostile("tool"), "output": {"html": hostile("tool-output")}})
        post(
            f"/api/v1/runs/{run['id']}/grounding/",
            {
                "grounding_scores": [0.2],
                "citations": [hostile("citation"), {"source_id": hostile("result-id"), "quote": hostile("quote")}],
                "unsupported_claims": [hostile("claim"), JS_URL],
                "output_confidence": 0.3,
                "output": hostile("output"),
                "sources": [{"id": hostile("source-id"), "text": hostile("source-text"), "score": 0.4}],
            },
        )
        post(f"/api/v1/runs/{run['id']}/complete/", {"output": hostile("final"), "error": hostile("error")})
    return run["id"]


def _assert_inert(page, path: str, dialogs: list, *, shows: str | None = None) -> None:
    page.goto(path)
    page.wait_for_load_state("networkidle")
    assert page.evaluate("typeof window.__xss") == "undefined", f"a payload ran on {path}"
    assert dialogs == [], f"a dialog opened on {path}: {dialogs}"
    for selector in ('a[href^="javascript" i]', '[src^="javascript" i]', '[action^="javascript" i]'):
        assert page.locator(selector).count() == 0, f"{selector} on {path}"
    # Links a tenant's text could have made are http(s) or the dashboard's own paths, nothing else.
    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
    odd = [h for h in hrefs if not re.match(r"^(https?://|/|\?|#|$)", h.strip(), re.IGNORECASE)]
    assert odd == [], f"links on {path}: {odd}"
    if shows is not None:
        assert shows in page.inner_text("body"), f"{shows!r} is not shown as text on {path}"


def test_script_payloads_in_every_field_render_as_text(browser_page, sign_in, hostile_world):
    page = browser_page
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    sign_in(page, "alice", PASSWORD, next_path="/violations/")
    run, policy, violation = hostile_world["run"], hostile_world["policy"], hostile_world["violation"]

    # The review comment, typed into the form as a reviewer would.
    page.goto(f"/violations/{violation}/")
    page.get_by_label(re.compile("Comment")).fill(COMMENT)
    page.get_by_role("button", name="Confirm violation").click()
    page.wait_for_load_state("networkidle")

    pages = [
        ("/", AGENT),
        ("/?period=7d", POLICY),
        ("/runs/", AGENT),
        (f"/runs/{run}/", POLICY),
        (f"/runs/{run}/?tab=governance", POLICY),
        (f"/runs/{run}/?tab=trace", SPAN),
        ("/violations/", POLICY),
        (f"/violations/{violation}/", COMMENT),
        ("/policies/", POLICY),
        (f"/policies/{policy}/", POLICY),
        (f"/policies/{policy}/history/", POLICY),
        ("/audit/", None),
        ("/score-audit/", AGENT),
        ("/settings/api-keys/", hostile("key")),
    ]
    for path, shows in pages:
        _assert_inert(page, path, dialogs, shows=shows)

    # The trace's retrieval record: titles, URLs and queries are text; the javascript: URL is not a link.
    page.goto(f"/runs/{run}/?tab=trace")
    body = page.text_content("body")  # with what sits in closed <details>
    shown = ["source-title", "query", "result-text", "claim", "citation", "quote", "output", "source-text", "tool"]
    for text in [hostile(label) for label in shown] + [JS_URL]:
        assert text in body, f"{text!r} missing from the trace"
    assert page.evaluate("typeof window.__xss") == "undefined"
