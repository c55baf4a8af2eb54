"""A reviewer reads why a run was blocked: the verifier's contradicted claim with the source sentence
it was checked against, the citation whose quote is not in its source, and what the run retrieved.

The agent runs through the SDK (client/) against the live server: a retrieval span with its
provenance record, then one grounding report with object citations and sources named by id. The
screenshots go to test-output/screenshots/ (evidence-governance.png, evidence-trace.png and a dark
one of the trace).
"""

import re
from datetime import UTC, datetime, timedelta

import pytest

pytest.importorskip("playwright")
from django.contrib.auth import get_user_model
from django_scopes import scopes_disabled
from playwright.sync_api import expect

from policies import services as policy_services
from tenants import services as tenant_services
from tenants.audit import Actor
from tenants.models import Role

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"
SYSTEM = Actor.system("browser-tests")
RULES = {
    "nli_check": True,
    "nli_phase": "both",
    "contradiction_action": "block",
    "citation_quotes": "required",
    "citations_must_resolve": True,
    "score_relevance_floor": 0.5,
    "min_citations": 1,
}

FED = (
    "In March 2023 the Federal Reserve raised its benchmark rate by 25 basis points, to a range of 4.75% "
    "to 5%. The vote was unanimous."
)
IMF = "The IMF expects global growth of 3.0% in 2023, down from 3.4% in 2022."
ECB = "The ECB raised its deposit rate by 50 basis points in March 2023."
NEWS = "Markets rallied after the central bank decision in March 2023."
OUTPUT = (
    "The Federal Reserve raised its benchmark rate by 50 basis points in March 2023. "
    "The IMF expects global growth of 3.0% in 2023."
)


@pytest.fixture
def world(live_server):
    with scopes_disabled():
        acme = tenant_services.tenant_create(slug="acme", name="Acme Research", actor=SYSTEM)
        alice = get_user_model().objects.create_user("alice", "alice@example.com", PASSWORD)
        tenant_services.membership_set(tenant=acme, user=alice, role=Role.ADMIN, actor=SYSTEM)
        policy_services.policy_create(
            tenant=acme,
            actor=SYSTEM,
            name="Verified Research",
            category="grounding",
            rules=RULES,
            scope={"agents": ["research-*"]},
            enabled=True,
        )
        _, key = tenant_services.api_key_create(tenant=acme, name="agent", actor=SYSTEM)
    return {"url": live_server.url, "key": key}


def _run_agent(url: str, key: str) -> int:
    import groundrule

    with groundrule.Client(base_url=url, api_key=key, max_retries=0) as client:
        with client.run(
            agent_name="research-agent",
            workflow_name="answer-question",
            input={"question": "What did the Fed do in March 2023?"},
            enforce_policy=False,
        ) as run:
            t0 = datetime.now(UTC)
            run.record_retrieval(
                ["fed rate decision march 2023", "imf global growth forecast 2023"],
                {
                    "knowledge_base": [
                        {
                            "source_id": "fed-2023-03",
                            "source_type": "vector_kb",
                            "relevance": 0.92,
                            "text": FED,
                            "metadata": {"heading_path": "Rates > 2023 > March"},
                        },
                        {"source_id": "ecb-2023-03", "source_type": "vector_kb", "relevance": 0.58, "text": ECB},
                        {"source_id": "imf-weo-2023", "source_type": "vector_kb", "relevance": 0.41, "text": IMF},
                    ],
                    "web_search": [
                        {"source_id": "news-4411", "source_type": "web", "relevance": 0.63, "text": NEWS},
                        {
                            "source_id": "news-0921",
                            "source_type": "web",
                            "relevance": 0.22,
                            "text": "A bakery in Ohio won a regional prize.",
                        },
                    ],
                },
                name="kb-search",
                scope="focused",
                filters={"year": 2023},
                total_results=14,
                deduplicated_to=5,
                retrieval_time_ms=45.2,
                intent_resolution_time_ms=120.5,
                started_at=t0,
                ended_at=t0 + timedelta(milliseconds=165),
            )
            run.record_llm_call(
                "gpt-4o-mini",
                prompt="What did the Fed do in March 2023?",
                response=OUTPUT,
                prompt_tokens=812,
                completion_tokens=36,
                started_at=t0 + timedelta(milliseconds=170),
                ended_at=t0 + timedelta(milliseconds=910),
            )
            run.record_grounding(
                grounding_scores=[0.92, 0.41],
                output=OUTPUT,
                output_confidence=0.8,
                citations=[
                    {"source_id": "fed-2023-03", "quote": "raised its benchmark rate by 50 basis points"},
                    {"source_id": "imf-weo-2023", "quote": "global growth of 3.0% in 2023"},
                ],
                sources=[{"id": "fed-2023-03"}, {"id": "imf-weo-2023"}],
            )
            run.set_result({"answer": OUTPUT}, output=OUTPUT)
        return run.id


def test_reviewer_sees_the_failed_claim_the_failed_citation_and_the_retrieval(
    browser_page, sign_in, screenshot, world, dark_page
):
    page, base = browser_page, world["url"]
    run_id = _run_agent(base, world["key"])

    sign_in(page, "alice", PASSWORD, next_path=f"/runs/{run_id}/")
    page.wait_for_load_state("load")
    expect(page.get_by_role("heading", name=re.compile(rf"Run #{run_id}"))).to_be_visible()

    # Governance: the contradicted claim, its source sentence, and the citation that failed.
    claims = page.get_by_role("table", name=re.compile("source sentence it was checked against")).first
    expect(claims).to_be_visible()
    failed = claims.locator("tr.gr-claim--contradicted").first
    expect(failed.get_by_role("rowheader")).to_have_text(
        "The Federal Reserve raised its benchmark rate by 50 basis points in March 2023."
    )
    expect(failed).to_contain_text("contradicted")
    expect(failed.locator("blockquote")).to_contain_text("raised its benchmark rate by 25 basis points")
    expect(failed).to_contain_text("number mismatch")
    citations = page.get_by_role("table", name=re.compile("Each citation that failed a check")).first
    expect(citations.locator("tr.gr-citefail--quote_not_found")).to_contain_text("fed-2023-03")
    expect(citations).to_contain_text("Quote not found in the source")
    expect(citations).to_contain_text("to a range of 4.75% to 5%")
    # The whole source with the matched sentence marked opens on demand.
    failed.get_by_text("Whole source").click()
    expect(failed.locator("mark")).to_contain_text("raised its benchmark rate by 25 basis points")
    page.evaluate("window.scrollTo(0, 0)")
    page.mouse.move(0, 0)
    screenshot(page, "evidence-governance")

    # Trace, over htmx: the retrieval grouped by source, with bars and markers.
    page.get_by_role("link", name="Trace", exact=True).click()
    expect(page).to_have_url(re.compile(r"tab=trace"))
    kb = page.get_by_role("table", name=re.compile("knowledge_base"))
    expect(kb).to_be_visible()
    expect(page.get_by_role("table", name=re.compile("web_search"))).to_be_visible()
    fed_row = kb.locator("tr", has_text="fed-2023-03")
    expect(fed_row).to_contain_text("0.92")
    expect(fed_row).to_contain_text("cited with a quote")
    expect(fed_row).to_contain_text("Quote not found in the source")
    imf_row = kb.locator("tr", has_text="imf-weo-2023")
    expect(imf_row).to_contain_text("below floor 0.5")
    expect(imf_row).to_contain_text("cited with a quote")
    expect(kb.locator("tr", has_text="ecb-2023-03")).to_contain_text("not cited")
    bar = fed_row.locator(".gr-meter-fill")
    width = bar.evaluate("el => el.getBoundingClientRect().width / el.parentElement.getBoundingClientRect().width")
    assert 0.88 < width < 0.96
    expect(page.locator("#run-tabs")).to_contain_text("fed rate decision march 2023")
    # The verdicts under the grounding report, open because it blocked.
    report = page.locator("#report-1")
    expect(report.locator("tr.gr-claim--contradicted").first).to_be_visible()
    page.evaluate("window.scrollTo(0, 0)")
    page.mouse.move(0, 0)
    screenshot(page, "evidence-trace")

    # The same in dark mode, for contrast.
    sign_in(dark_page, "alice", PASSWORD, next_path=f"/runs/{run_id}/")
    dark_page.goto(f"{base}/runs/{run_id}/?tab=trace")
    expect(dark_page.get_by_role("table", name=re.compile("knowledge_base"))).to_be_visible()
    screenshot(dark_page, "evidence-trace-dark")
