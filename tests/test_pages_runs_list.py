"""The runs list as a reviewer scans it: its columns, every sort walked page by page, the filters
(action, agent, policy, time) beside them, and the columns kept by the services that write runs."""

import random
import re
from datetime import timedelta

import pytest
from api_support import LENIENT, STRICT, complete, create_policy, ground, start_run
from django.utils import timezone
from django_scopes import scopes_disabled
from pages_support import signed_in

from governance.models import Run
from governance.selectors.run_list import SORTS

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
SEVERITY = {"allow": 0, "warn": 1, "block": 2}


def _run_ids(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'href="/runs/(\d+)/">#', html)]


def _runs(tenant, count, seed=7) -> list[Run]:
    """Runs with every column varied, ties and empty values included."""
    rng = random.Random(seed)
    now = timezone.now()
    with scopes_disabled():
        rows = []
        for i in range(count):
            started = now - timedelta(minutes=rng.randint(0, 500))
            ended = None if i % 9 == 0 else started + timedelta(milliseconds=rng.choice([40, 900, 900, 15_000]))
            rows.append(
                Run(
                    tenant=tenant,
                    agent_name=f"agent-{rng.randint(0, 3)}",
                    workflow_name=rng.choice(["", "answer", "summarise"]),
                    status="completed" if ended else "running",
                    final_action=rng.choice(["allow", "allow", "warn", "block"]),
                    started_at=started,
                    ended_at=ended,
                    duration_ms=int((ended - started).total_seconds() * 1000) if ended else None,
                    report_count=rng.randint(0, 4),
                    worst_score=None if i % 5 == 0 else rng.choice([0.1, 0.42, 0.42, 0.9]),
                    judge_cost=rng.choice([0.0, 0.0, 0.00012, 0.0031]),
                )
            )
        Run.objects.bulk_create(rows)
        return list(Run.objects.filter(tenant=tenant))


def _expected(runs, key: str, descending: bool) -> list[int]:
    column = SORTS[key].column
    if key == "action":
        ranked = sorted(
            runs,
            key=lambda r: (SEVERITY[r.final_action], r.pk) if not descending else (-SEVERITY[r.final_action], -r.pk),
        )
        if not descending:
            ranked = sorted(runs, key=lambda r: (SEVERITY[r.final_action], -r.pk))
        return [r.pk for r in ranked]
    present = [r for r in runs if getattr(r, column) is not None]
    empty = sorted((r for r in runs if getattr(r, column) is None), key=lambda r: -r.pk)
    ordered = sorted(present, key=lambda r: (getattr(r, column), r.pk), reverse=descending)
    return [r.pk for r in ordered + empty]


def _walk(client, url) -> tuple[list[int], list[int]]:
    seen, sizes = [], []
    while url:
        html = client.get(url).content.decode()
        ids = _run_ids(html)
        seen += ids
        sizes.append(len(ids))
        following = re.search(r'rel="next" href="([^"]+)"', html)
        url = "/runs/" + following.group(1).replace("&amp;", "&") if following else None
    return seen, sizes


@pytest.mark.parametrize("key", [k for k in SORTS if k != "started"] + ["started"])
@pytest.mark.parametrize("descending", [False, True])
def test_every_sort_walks_every_run_once_in_its_order(alice, acme, key, descending):
    runs = _runs(acme, 131)
    seen, sizes = _walk(signed_in(alice), f"/runs/?sort={'-' if descending else ''}{key}")
    if key == "started" and descending:
        assert seen == sorted((r.pk for r in runs), reverse=True)  # the default: newest first
    else:
        assert seen == _expected(runs, key, descending)
    assert sizes == [50, 50, 31]


def test_the_columns_show_what_each_run_added_up_to(alice, acme):
    now = timezone.now()
    with scopes_disabled():
        run = Run.objects.create(
            tenant=acme,
            agent_name="research-agent",
            workflow_name="answer",
            final_action="warn",
            started_at=now - timedelta(seconds=3),
            ended_at=now,
            report_count=12,
            worst_score=0.375,
            judge_cost=0.0031,
            status="completed",
        )
    html = signed_in(alice).get("/runs/").content.decode()
    headers = re.findall(r'<th scope="col"[^>]*>(?:<a[^>]*>)?([^<]+)', html)
    assert headers == [
        "Run",
        "Final action",
        "Worst score",
        "Reports",
        "Duration",
        "Judge cost",
        "Agent",
        "Workflow",
        "Started",
        "Status",
    ]
    row = html[html.index(f'href="/runs/{run.pk}/">#') :]
    cells = [
        re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r'<td[^>]*data-col="(?:\w+)"[^>]*>(.*?)</td>', row)[:8]
    ]
    assert cells[:6] == ["warn", "0.38", "12", "3.0 s", "$0.0031", "research-agent"]
    assert cells[6] == "answer"


def test_headers_say_the_order_and_a_second_click_reverses_it(alice, acme):
    _runs(acme, 3)
    client = signed_in(alice)
    html = client.get("/runs/").content.decode()
    assert 'aria-sort="descending" data-sort="started"' in html
    assert 'data-sort="score"><a class="gr-sort gr-sort--none" href="?sort=score"' in html
    html = client.get("/runs/?sort=score").content.decode()
    assert 'aria-sort="ascending" data-sort="score"><a class="gr-sort gr-sort--ascending" href="?sort=-score"' in html
    html = client.get("/runs/?sort=-cost", **HX).content.decode()
    assert 'aria-sort="descending" data-sort="cost"' in html and "<html" not in html


def test_sort_and_filters_stay_together_in_the_url(alice, acme):
    runs = _runs(acme, 60)
    html = signed_in(alice).get("/runs/?sort=-reports&agent=agent-1&final_action=block").content.decode()
    wanted = [r for r in runs if r.agent_name == "agent-1" and r.final_action == "block"]
    assert _run_ids(html) == _expected(wanted, "reports", True)
    assert 'name="sort" value="-reports"' in html  # filtering again keeps the sort
    assert 'href="?sort=score&amp;agent=agent-1&amp;final_action=block"' in html


@pytest.mark.parametrize("cursor", ["garbage", "WzAsbnVsbCwtMV0", "W10", "WzksMSwxXQ"])
def test_a_tampered_cursor_is_the_first_page_not_an_error(alice, acme, cursor):
    runs = _runs(acme, 8)
    response = signed_in(alice).get(f"/runs/?sort=score&cursor={cursor}")
    assert response.status_code == 200
    assert _run_ids(response.content.decode()) == _expected(runs, "score", False)


@pytest.mark.parametrize(
    ("key", "cursor"),
    [
        ("reports", "WzAsIngiLDVd"),  # [0, "x", 5]: text where a count goes
        ("agent", "WzAsMS41LDVd"),  # [0, 1.5, 5]: a number where a name goes
        ("started", "WzAsIjIwMjYtMTMtNDVUMDA6MDA6MDArMDA6MDAiLDVd"),  # month 13
    ],
)
def test_a_cursor_of_the_wrong_kind_for_the_sort_is_the_first_page(alice, acme, key, cursor):
    runs = _runs(acme, 6)
    response = signed_in(alice).get(f"/runs/?sort={key}&cursor={cursor}")
    assert response.status_code == 200
    assert _run_ids(response.content.decode()) == _expected(runs, key, False)


def test_an_unknown_sort_is_newest_first(alice, acme):
    runs = _runs(acme, 5)
    html = signed_in(alice).get("/runs/?sort=-password").content.decode()
    assert _run_ids(html) == sorted((r.pk for r in runs), reverse=True)


def test_another_tenants_runs_never_appear_in_any_sort(alice, acme, globex):
    _runs(globex, 20, seed=1)
    mine = {r.pk for r in _runs(acme, 5)}
    client = signed_in(alice)
    for key in SORTS:
        for sign in ("", "-"):
            assert set(_run_ids(client.get(f"/runs/?sort={sign}{key}").content.decode())) == mine


def test_a_sorted_and_filtered_page_is_a_fixed_number_of_queries(alice, acme, django_assert_max_num_queries):
    _runs(acme, 130)
    client = signed_in(alice)
    client.get("/runs/")
    for url in (
        "/runs/",
        "/runs/?sort=score",
        "/runs/?sort=-action&agent=agent-2",
        "/runs/?sort=-duration&policy=Strict",
    ):
        # session, user, membership/tenant, then the page's segments (at most three, for the actions)
        with django_assert_max_num_queries(9):
            assert client.get(url).status_code == 200


def test_policy_filter_keeps_the_runs_that_policy_spoke_in(alice, acme, api):
    strict = create_policy(api, name="Strict", rules=STRICT, agents=["research-*"])
    create_policy(api, name="Lenient", rules=LENIENT, agents=["support-*"])
    research = start_run(api, "research-agent")
    support = start_run(api, "support-bot")
    client = signed_in(alice)
    assert _run_ids(client.get("/runs/?policy=Strict").content.decode()) == [research]
    assert _run_ids(client.get(f"/runs/?policy={strict['id']}").content.decode()) == [research]
    assert _run_ids(client.get("/runs/?policy=Lenient&sort=-started").content.decode()) == [support]
    assert client.get("/runs/?policy=Nobody").content.decode().count("No runs match these filters.") == 1
    listed = api.get("/api/v1/runs/?policy=Strict").json()["results"]
    assert [r["id"] for r in listed] == [research]


def test_reports_and_completion_keep_worst_score_count_duration(api, acme):
    create_policy(api, name="Lenient", rules=LENIENT)
    run_id = start_run(api)
    for scores in ([0.9, 0.2], [0.6], [], [0.95]):
        assert ground(api, run_id, grounding_scores=scores).status_code == 200
    assert complete(api, run_id, output="done").status_code == 200
    body = api.get(f"/api/v1/runs/{run_id}/").json()
    assert body["report_count"] == 4 and body["worst_score"] == 0.6 and body["judge_cost"] == 0.0
    with scopes_disabled():
        run = Run.objects.get(pk=run_id)
    assert run.duration_ms == int((run.ended_at - run.started_at).total_seconds() * 1000)
    assert body["duration_ms"] == run.duration_ms
