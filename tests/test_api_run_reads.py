"""Reading one run over the API, bounded: the summary (counts, latest decision) and its reports,
evaluations and spans as cursor-paginated lists; the whole body behind the deprecated ?expand=all."""

import pytest
from api_support import LENIENT, all_pages, complete, create_policy, ground, post_json, start_run
from test_api_key_scopes import client_for

from tenants.models import KeyScope

pytestmark = pytest.mark.django_db

LISTS = ("reports", "evaluations", "spans")


@pytest.fixture
def long_run(api):
    create_policy(api, name="Lenient", rules=LENIENT)
    run_id = start_run(api, workflow_name="answer")
    for n in range(7):
        response = ground(
            api,
            run_id,
            grounding_scores=[0.9 - n / 100],
            citations=[f"doc-{n}"],
            sources=[{"id": f"doc-{n}", "text": f"Source number {n}."}],
        )
        assert response.status_code == 200, response.content
        post_json(api, f"/api/v1/runs/{run_id}/spans/", {"kind": "tool", "name": f"search {n}"})
    assert complete(api, run_id, output="done").status_code == 200
    return run_id


def test_run_summary_gives_counts_and_the_latest_decision_not_the_rows(api, long_run):
    body = api.get(f"/api/v1/runs/{long_run}/").json()

    assert body["id"] == long_run and body["status"] == "completed" and body["workflow_name"] == "answer"
    assert body["counts"] == {"reports": 7, "evaluations": 9, "violations": 0, "spans": 7}
    latest = body["latest_decision"]
    assert latest["phase"] == "after_workflow" and latest["action"] == "allow"
    assert [e["policy_name"] for e in latest["evaluations"]] == ["Lenient"]
    assert not {"reports", "evaluations", "spans", "citations"} & body.keys()


def test_run_lists_page_through_every_row_oldest_first(api, long_run):
    reports = all_pages(api, f"/api/v1/runs/{long_run}/reports/?page_size=3")
    assert [r["seq"] for r in reports] == [1, 2, 3, 4, 5, 6, 7]
    assert reports[2]["sources"] == [{"id": "doc-2", "text": "Source number 2.", "score": None}]
    evaluations = all_pages(api, f"/api/v1/runs/{long_run}/evaluations/?page_size=4")
    assert [e["phase"] for e in evaluations] == ["before_workflow"] + ["mid_execution"] * 7 + ["after_workflow"]
    spans = all_pages(api, f"/api/v1/runs/{long_run}/spans/?page_size=2")
    assert [s["name"] for s in spans] == [f"search {n}" for n in range(7)]

    page = api.get(f"/api/v1/runs/{long_run}/reports/?page_size=3").json()
    assert set(page) == {"next", "previous", "results"} and page["previous"] is None
    back = api.get(api.get(page["next"]).json()["previous"]).json()
    assert [r["seq"] for r in back["results"]] == [1, 2, 3]


@pytest.mark.parametrize("which", LISTS)
@pytest.mark.parametrize("size", ["0", "501", "ten", "-1", ""])
def test_a_page_size_outside_1_to_500_is_a_400_naming_it(api, long_run, which, size):
    response = api.get(f"/api/v1/runs/{long_run}/{which}/?page_size={size}")
    assert response.status_code == 400
    assert response.json()["page_size"] == ["Must be a whole number from 1 to 500."]


@pytest.mark.parametrize("which", LISTS)
def test_a_tampered_cursor_or_an_unknown_parameter_is_a_400(api, long_run, which):
    assert api.get(f"/api/v1/runs/{long_run}/{which}/?cursor=%%%").json() == {"cursor": ["Invalid cursor."]}
    assert api.get(f"/api/v1/runs/{long_run}/{which}/?pagesize=3").json() == {"pagesize": ["Unknown query parameter."]}


@pytest.mark.parametrize("path", ["", "reports/", "evaluations/", "spans/", "?expand=all"])
def test_another_tenants_run_and_its_lists_are_404(other_api, long_run, path):
    response = other_api.get(f"/api/v1/runs/{long_run}/{path}")
    assert response.status_code == 404
    assert "results" not in response.json()


@pytest.mark.parametrize("path", ["", "reports/", "evaluations/", "spans/"])
def test_an_agent_key_reads_only_the_lists_of_runs_it_started(acme, path):
    mine_client, _ = client_for(acme)
    other_client, _ = client_for(acme)
    mine, theirs = start_run(mine_client), start_run(other_client)
    assert mine_client.get(f"/api/v1/runs/{mine}/{path}").status_code == 200
    assert mine_client.get(f"/api/v1/runs/{theirs}/{path}").status_code == 404
    reader, _ = client_for(acme, KeyScope.READ)
    assert reader.get(f"/api/v1/runs/{theirs}/{path}").status_code == 200


def test_expand_all_still_answers_the_whole_run_marked_deprecated(api, long_run):
    response = api.get(f"/api/v1/runs/{long_run}/?expand=all")

    assert response.status_code == 200
    assert response["Deprecation"] == "true"
    assert f'/api/v1/runs/{long_run}/reports/>; rel="successor-version"' in response["Link"]
    body = response.json()
    assert [r["seq"] for r in body["reports"]] == [1, 2, 3, 4, 5, 6, 7]
    assert len(body["evaluations"]) == 9 and len(body["spans"]) == 7
    assert body["citations"] == [f"doc-{n}" for n in range(7)]
    assert "Deprecation" not in api.get(f"/api/v1/runs/{long_run}/")


def test_expand_other_than_all_is_a_400_naming_it(api, long_run):
    response = api.get(f"/api/v1/runs/{long_run}/?expand=reports")
    assert response.status_code == 400
    assert response.json() == {"expand": ['Must be "all" or left out.']}


def test_the_schema_documents_the_lists_and_the_deprecated_expand(api):
    schema = api.get("/api/v1/schema/?format=json").json()
    for which in LISTS:
        get = schema["paths"][f"/api/v1/runs/{{id}}/{which}/"]["get"]
        names = {p["name"] for p in get["parameters"]}
        assert {"cursor", "page_size"} <= names
        listed = get["responses"]["200"]["content"]["application/json"]["schema"]
        assert "$ref" in listed or "properties" in listed
    detail = schema["paths"]["/api/v1/runs/{id}/"]["get"]
    expand = next(p for p in detail["parameters"] if p["name"] == "expand")
    assert expand["deprecated"] is True and expand["schema"]["enum"] == ["all"]
