"""The evidence pack (issue 11 item 6): everything needed to re-check a run's decisions offline."""

import json

import pytest
from api_support import LENIENT, STRICT, complete, create_policy, ground, start_run
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django_scopes import scopes_disabled

from governance.models import Evaluation
from policies.categories import get_category
from policies.engine import PolicySpec, RunState, evaluate_phase
from tenants import chain

pytestmark = pytest.mark.django_db
GROUNDING = get_category("grounding")


@pytest.fixture
def reviewed_run(api, client, alice):
    create_policy(api, name="Lenient", rules=LENIENT)
    create_policy(api, name="Strict shadow", rules=STRICT, mode="shadow")
    run = start_run(api)
    ground(api, run, grounding_scores=[0.65], citations=[], output_confidence=0.2, output="Rates rose.")
    post = api.post(f"/api/v1/runs/{run}/spans/", {"kind": "tool", "name": "search"}, format="json")
    assert post.status_code == 201
    complete(api, run, output="Rates rose.")
    with scopes_disabled():
        violation = Evaluation.objects.filter(run_id=run, action="warn", shadow=False).first()
    client.force_login(alice)
    client.post(f"/violations/{violation.pk}/", {"state": "confirmed", "comment": "Right call"})
    return run, violation


def test_the_pack_has_everything_to_recheck_a_decision(api, reviewed_run):
    run, violation = reviewed_run
    response = api.get(f"/api/v1/runs/{run}/evidence/")
    assert response.status_code == 200
    pack = response.json()
    assert pack["format"] == "groundrule.evidence/1"
    assert pack["run"]["id"] == run and len(pack["reports"]) == 1 and len(pack["spans"]) == 1
    assert [d["phase"] for d in pack["decisions"]] == ["before_workflow", "mid_execution", "after_workflow"]
    assert any(e["shadow"] for e in pack["evaluations"]) and any(not e["shadow"] for e in pack["evaluations"])
    names = {v["snapshot"]["name"] for v in pack["policy_versions"]}
    assert names == {"Lenient", "Strict shadow"}

    # Re-check the mid_execution decision from the pack alone, with the pure engine.
    specs = [
        PolicySpec(
            v["policy_id"],
            v["snapshot"]["name"],
            v["snapshot"]["category"],
            v["version"],
            GROUNDING.effective_rules(v["snapshot"]["rules"]),
            mode=v["snapshot"].get("mode", "enforce"),
        )
        for v in pack["policy_versions"]
    ]
    report = pack["reports"][0]
    state = RunState(
        grounding_scores=tuple(report["grounding_scores"]),
        citations=tuple(report["citations"]),
        output_confidence=report["output_confidence"],
        output=report["output"],
    )
    again = evaluate_phase("mid_execution", specs, state)
    stored = next(d for d in pack["decisions"] if d["phase"] == "mid_execution")
    assert (again.action, again.reason) == (stored["action"], stored["reason"])

    assert pack["reviews"] == [
        {
            "evaluation_id": violation.pk,
            "state": "confirmed",
            "reviewer": "alice",
            "reviewed_at": pack["reviews"][0]["reviewed_at"],
            "comment": "Right call",
        }
    ]
    audit = pack["audit"]
    assert [a["action"] for a in audit] == ["governance.violation.confirmed"]
    row = audit[0]
    assert chain.hash_of_export_row(row) == row["hash"]


def test_another_tenants_run_is_not_found(api, other_api, reviewed_run):
    run, _ = reviewed_run
    assert other_api.get(f"/api/v1/runs/{run}/evidence/").status_code == 404
    assert api.get("/api/v1/runs/999999/evidence/").status_code == 404


def test_the_run_page_offers_the_download(client, alice, dave, charlie, reviewed_run):
    run, _ = reviewed_run
    client.force_login(dave)
    page = client.get(f"/runs/{run}/").text
    assert f'href="/runs/{run}/evidence.json"' in page and "Download evidence" in page
    response = client.get(f"/runs/{run}/evidence.json")
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="run-{run}-evidence.json"'
    assert json.loads(response.content)["run"]["id"] == run
    client.force_login(charlie)
    assert client.get(f"/runs/{run}/evidence.json").status_code == 404


def test_evidence_is_in_the_schema(api):
    assert "/api/v1/runs/{id}/evidence/" in api.get("/api/v1/schema/?format=json").content.decode()


def test_the_pack_reads_a_fixed_number_of_queries_whatever_the_reports(api, django_assert_max_num_queries):
    # Each report's sources were joined by a query of their own (a query per report).
    def run_with(n):
        run = start_run(api)
        for i in range(n):
            source = {"id": f"s{i}", "text": f"Source {i} text."}
            ground(api, run, grounding_scores=[0.9], citations=[f"s{i}"], sources=[source])
        return run

    one, many = run_with(1), run_with(6)
    with CaptureQueriesContext(connection) as small:
        assert api.get(f"/api/v1/runs/{one}/evidence/").status_code == 200
    with django_assert_max_num_queries(len(small.captured_queries)):
        pack = api.get(f"/api/v1/runs/{many}/evidence/").json()
    assert [r["sources"][0]["text"] for r in pack["reports"]] == [f"Source {i} text." for i in range(6)]
