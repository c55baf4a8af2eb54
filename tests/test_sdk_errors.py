"""The SDK's error classes: one per 4xx status the server answers, each with the server's
X-Request-ID, status code and parsed body; 429 from the server's own rate limit, and retries
against a loopback server that scripts each answer; the sans-IO exchange that both clients share."""

import asyncio
import datetime as dt
import email.utils
import re
import time

import httpx
import pytest
from sdk_support import FakeGroundrule

import groundrule
from groundrule import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    GroundruleAPIError,
    GroundruleError,
    GroundruleUnavailable,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    PolicyViolationError,
    RateLimitError,
)
from groundrule._config import resolve_config
from groundrule._protocol import Done, Exchange, Retry
from tenants import services as tenant_services
from tenants.audit import Actor

REQUEST_ID = re.compile(r"[0-9a-f]{32}")  # what the server's RequestIdMiddleware makes up
ALLOW = {"action": "allow", "phase": "before_workflow", "reason": "Grounding rules stored", "evaluations": []}
STARTED = (201, {"id": 7, "status": "running", "decision": ALLOW})


@pytest.fixture
def live(live_server, acme_key):
    with groundrule.Client(base_url=live_server.url, api_key=acme_key[1], backoff_base=0.01) as client:
        yield client


def assert_from_server(error: GroundruleAPIError, status: int) -> None:
    assert error.status_code == status
    assert REQUEST_ID.fullmatch(error.request_id), error.request_id
    assert error.request_id in str(error)
    assert isinstance(error, GroundruleAPIError) and isinstance(error, GroundruleError)
    assert not isinstance(error, GroundruleUnavailable)


# -- against the live server --------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_400_is_a_bad_request_error_naming_the_field(live):
    with pytest.raises(BadRequestError) as caught:
        with live.run(agent_name=""):
            pytest.fail("the run must not start")
    assert_from_server(caught.value, 400)
    assert caught.value.body == {"agent_name": ["This field may not be blank."]}
    assert (caught.value.method, caught.value.path) == ("POST", "runs/")


@pytest.mark.django_db(transaction=True)
def test_400_inside_a_run_is_raised_even_when_failing_open(live):
    with pytest.raises(BadRequestError) as caught:
        with live.run(agent_name="research-agent") as run:
            run.record_grounding(grounding_scores=[1.5])
    assert_from_server(caught.value, 400)
    assert caught.value.body == {"grounding_scores": {"0": ["Must be between 0.0 and 1.0."]}}
    assert not run.failed_open


@pytest.mark.django_db(transaction=True)
def test_401_is_an_authentication_error(live_server, acme_key):
    with groundrule.Client(base_url=live_server.url, api_key="gr_not_a_key") as client:
        with pytest.raises(AuthenticationError) as caught:
            client.run(agent_name="research-agent").__enter__()
    assert_from_server(caught.value, 401)
    assert "detail" in caught.value.body
    assert "gr_not_a_key" not in str(caught.value)  # the key is never echoed


@pytest.mark.django_db(transaction=True)
def test_403_is_a_permission_denied_error_raised_even_when_failing_open(live_server, acme):
    _, raw = tenant_services.api_key_create(tenant=acme, name="reader", actor=Actor.system("tests"), scope="read")
    with groundrule.Client(base_url=live_server.url, api_key=raw) as client:
        with pytest.raises(PermissionDeniedError) as caught:
            client.run(agent_name="research-agent").__enter__()
    assert_from_server(caught.value, 403)
    assert "agent scope" in caught.value.body["detail"]


@pytest.mark.django_db(transaction=True)
def test_the_servers_own_rate_limit_is_a_rate_limit_error_with_its_retry_after(live_server, acme_key, settings):
    settings.API_RATE_LIMIT = "1/min"
    with groundrule.Client(base_url=live_server.url, api_key=acme_key[1], fail_open=False) as client:
        client.run(agent_name="research-agent").__enter__()
        with pytest.raises(RateLimitError) as caught:
            client.run(agent_name="research-agent").__enter__()
    error = caught.value
    assert REQUEST_ID.fullmatch(error.request_id) and error.request_id == error.body["request_id"]
    assert 0 < error.retry_after <= 60  # over backoff_max: no retry, an outage for fail_open to judge


@pytest.mark.django_db(transaction=True)
def test_404_for_another_tenants_run(live, other_api):
    theirs = other_api.post("/api/v1/runs/", {"agent_name": "their-agent"}, format="json").json()["id"]
    with pytest.raises(NotFoundError) as caught:
        live.get_run(theirs)
    assert_from_server(caught.value, 404)
    assert caught.value.path == f"runs/{theirs}/"


@pytest.mark.django_db(transaction=True)
def test_get_run_reads_the_own_run(live):
    with live.run(agent_name="research-agent") as run:
        run.record_grounding(grounding_scores=[0.9], citations=["A"])
    detail = live.get_run(run.id)
    assert detail["id"] == run.id and detail["status"] == "completed"
    assert detail["counts"]["reports"] == 1 and detail["latest_decision"]["phase"] == "after_workflow"
    assert [r["citations"] for r in live.iter_run(run.id, "reports")] == [["A"]]


@pytest.mark.django_db(transaction=True)
def test_409_when_the_run_was_completed_elsewhere(live, api):
    with live.run(agent_name="research-agent") as run:
        assert api.post(f"/api/v1/runs/{run.id}/complete/", {}, format="json").status_code == 200
        with pytest.raises(ConflictError) as caught:
            run.record_grounding(grounding_scores=[0.9])
    # Leaving the block completes again: that 409 is expected and swallowed.
    assert_from_server(caught.value, 409)
    assert "already completed" in caught.value.body["detail"]


@pytest.mark.django_db(transaction=True)
def test_413_for_a_body_over_the_limit(live, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 64 * 1024
    with pytest.raises(PayloadTooLargeError) as caught:
        with live.run(agent_name="research-agent") as run:
            run.record_grounding(grounding_scores=[0.9], output="x" * 100_000)
    assert_from_server(caught.value, 413)
    assert "the limit is 65536 bytes" in caught.value.body["detail"]


@pytest.mark.django_db(transaction=True)
def test_async_client_raises_the_same_classes(live_server, acme_key, other_api):
    theirs = other_api.post("/api/v1/runs/", {"agent_name": "their-agent"}, format="json").json()["id"]

    async def main():
        async with groundrule.AsyncClient(base_url=live_server.url, api_key=acme_key[1]) as client:
            with pytest.raises(BadRequestError) as bad:
                async with client.run(agent_name=""):
                    pass
            with pytest.raises(NotFoundError) as missing:
                await client.get_run(theirs)
        async with groundrule.AsyncClient(base_url=live_server.url, api_key="gr_nope") as client:
            with pytest.raises(AuthenticationError) as unauthenticated:
                await client.check_grounding("Rates rose.", [{"id": "a", "text": "Rates rose."}])
        return bad.value, missing.value, unauthenticated.value

    bad, missing, unauthenticated = asyncio.run(main())
    assert_from_server(bad, 400)
    assert_from_server(missing, 404)
    assert_from_server(unauthenticated, 401)


# -- 429 and retries, against a loopback server ---------------------------------------------------


def fake_client(url: str, **options) -> groundrule.Client:
    options.setdefault("backoff_base", 0.01)
    return groundrule.Client(base_url=url, api_key="gr_test", **options)


def test_429_waits_for_retry_after_then_succeeds():
    too_many = (429, {"detail": "Slow down"}, {"Retry-After": "0.4", "X-Request-ID": "r1"})
    with FakeGroundrule({"runs/": [too_many, STARTED], "*/complete/": [(409, {})]}) as server:
        with fake_client(server.url, fail_open=False) as gr:
            started = time.monotonic()
            run = gr.run(agent_name="a").__enter__()
            waited = time.monotonic() - started
    assert run.id == 7
    assert server.count("runs/") == 2
    assert waited >= 0.4  # the server's Retry-After, not the 0.01 s backoff


def test_429_after_every_retry_is_a_rate_limit_error_with_the_request_id():
    too_many = (429, {"detail": "Slow down"}, {"Retry-After": "0", "X-Request-ID": "req-429"})
    with FakeGroundrule({"runs/": [too_many]}) as server, fake_client(server.url, fail_open=False, max_retries=2) as gr:
        with pytest.raises(RateLimitError) as caught:
            gr.run(agent_name="a").__enter__()
    error = caught.value
    assert server.count("runs/") == 3
    assert (error.status_code, error.request_id, error.body, error.retry_after) == (
        429,
        "req-429",
        {"detail": "Slow down"},
        0.0,
    )
    # Still an outage, as before: fail_open decides, and `except GroundruleUnavailable` catches it.
    assert isinstance(error, GroundruleUnavailable) and not isinstance(error, GroundruleAPIError)


def test_429_with_a_long_retry_after_fails_open_at_once():
    too_many = (429, {}, {"Retry-After": "3600"})
    with FakeGroundrule({"runs/": [too_many]}) as server, fake_client(server.url) as gr:
        with gr.run(agent_name="a") as run:
            decision = run.record_grounding(grounding_scores=[0.1])
    assert run.failed_open and decision.failed_open
    assert server.count("runs/") == 1


def test_other_4xx_statuses_keep_the_base_class():
    with FakeGroundrule({"runs/": [(405, {"detail": "Method not allowed"}, {"X-Request-ID": "r405"})]}) as server:
        with fake_client(server.url) as gr, pytest.raises(GroundruleAPIError) as caught:
            gr.run(agent_name="a").__enter__()
    assert type(caught.value) is GroundruleAPIError
    assert (caught.value.status_code, caught.value.request_id) == (405, "r405")


def test_5xx_after_retries_carries_the_request_id_and_body():
    with FakeGroundrule({"runs/": [(503, {"detail": "maintenance"}, {"X-Request-ID": "r503"})]}) as server:
        with fake_client(server.url, fail_open=False, max_retries=1) as gr:
            with pytest.raises(GroundruleUnavailable) as caught:
                gr.run(agent_name="a").__enter__()
    assert type(caught.value) is GroundruleUnavailable
    assert (caught.value.status_code, caught.value.request_id, caught.value.body) == (
        503,
        "r503",
        {"detail": "maintenance"},
    )


def test_async_429_is_retried_then_raised():
    too_many = (429, {"detail": "Slow down"}, {"Retry-After": "0", "X-Request-ID": "a429"})

    async def main(url):
        async with groundrule.AsyncClient(base_url=url, api_key="gr_test", fail_open=False, backoff_base=0.01) as gr:
            async with gr.run(agent_name="a"):
                pass

    with FakeGroundrule({"runs/": [too_many]}) as server:
        with pytest.raises(RateLimitError) as caught:
            asyncio.run(main(server.url))
    assert server.count("runs/") == 3
    assert caught.value.request_id == "a429"


def test_a_block_is_still_no_groundrule_error():
    assert not issubclass(PolicyViolationError, GroundruleError)


# -- the shared sans-IO exchange ------------------------------------------------------------------


def exchange(replayable: bool, **options) -> Exchange:
    config = resolve_config(
        base_url="http://127.0.0.1:9",
        api_key="k",
        timeout=1.0,
        fail_open=True,
        max_retries=options.get("max_retries", 2),
        backoff_base=0.1,
        backoff_max=5.0,
    )
    return Exchange(config, "POST", "runs/", {"agent_name": "a"}, replayable=replayable)


def answer(status: int, body=None, **headers) -> httpx.Response:
    return httpx.Response(status, json=body if body is not None else {}, headers=headers)


def test_exchange_plans_retries_without_io():
    plan = exchange(replayable=False)
    assert plan.content == b'{"agent_name": "a"}'
    first = plan.handle(answer(500))
    assert isinstance(first, Retry) and 0.05 <= first.delay <= 0.1 and first.cause == "HTTP 500"
    assert plan.handle(answer(429, **{"Retry-After": "2"})) == Retry(2.0, "HTTP 429")
    with pytest.raises(RateLimitError):
        plan.handle(answer(429))  # max_retries spent
    assert plan.attempt == 2


def test_exchange_retries_ambiguous_failures_only_when_replayable():
    request = httpx.Request("POST", "http://127.0.0.1:9/api/v1/runs/")
    lost = httpx.ReadTimeout("timed out", request=request)
    with pytest.raises(GroundruleUnavailable, match="ReadTimeout") as caught:
        exchange(replayable=False).handle(lost)
    assert caught.value.__cause__ is lost and caught.value.status_code is None
    assert isinstance(exchange(replayable=True).handle(lost), Retry)
    assert isinstance(exchange(replayable=False).handle(httpx.ConnectError("refused", request=request)), Retry)
    with pytest.raises(GroundruleUnavailable, match="answered 502"):
        exchange(replayable=False).handle(answer(502))
    assert isinstance(exchange(replayable=True).handle(answer(502)), Retry)


def test_exchange_maps_statuses_to_classes_and_results():
    assert exchange(False).handle(answer(201, {"id": 1})) == Done({"id": 1})
    for status, error_class in [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, PermissionDeniedError),
        (404, NotFoundError),
        (409, ConflictError),
        (413, PayloadTooLargeError),
        (422, GroundruleAPIError),
    ]:
        with pytest.raises(error_class) as caught:
            exchange(False).handle(answer(status, {"detail": "x"}, **{"X-Request-ID": f"id{status}"}))
        assert type(caught.value) is error_class
        assert (caught.value.status_code, caught.value.body, caught.value.request_id) == (
            status,
            {"detail": "x"},
            f"id{status}",
        )
    with pytest.raises(GroundruleUnavailable, match="not JSON"):
        exchange(False).handle(httpx.Response(200, text="<html>proxy</html>"))


def test_retry_after_may_be_an_http_date():
    when = email.utils.format_datetime(dt.datetime.now(dt.UTC) + dt.timedelta(seconds=3), usegmt=True)
    step = exchange(replayable=False).handle(answer(503, **{"Retry-After": when}))
    assert isinstance(step, Retry) and 1.0 < step.delay <= 3.0
    past = email.utils.format_datetime(dt.datetime(2000, 1, 1, tzinfo=dt.UTC), usegmt=True)
    assert exchange(replayable=False).handle(answer(503, **{"Retry-After": past})) == Retry(0.0, "HTTP 503")


@pytest.mark.django_db(transaction=True)
def test_iter_run_follows_the_servers_pages_in_both_clients(live, live_server, acme_key, monkeypatch):
    monkeypatch.setattr("groundrule._protocol.LIST_PAGE_SIZE", 2)
    with live.run(agent_name="research-agent") as run:
        for n in range(5):
            run.record_grounding(grounding_scores=[0.9], citations=[f"doc-{n}"])
    assert [r["seq"] for r in live.iter_run(run.id, "reports")] == [1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="which must be one of reports, evaluations, spans"):
        next(live.iter_run(run.id, "decisions"))

    async def main():
        async with groundrule.AsyncClient(base_url=live_server.url, api_key=acme_key[1]) as client:
            return [r["citations"] async for r in client.iter_run(run.id, "reports")]

    assert asyncio.run(main()) == [[f"doc-{n}"] for n in range(5)]


@pytest.mark.django_db(transaction=True)
def test_a_span_block_records_its_own_start_and_end_in_both_clients(live, live_server, acme_key):
    with live.run(agent_name="research-agent") as run:
        before = dt.datetime.now(dt.UTC)
        with run.span("tool", "search", input={"q": "rates"}) as span:
            time.sleep(0.05)
            span.output = {"hits": 3}
        with pytest.raises(KeyError):
            with run.span("llm", "gpt-4o-mini"):
                raise KeyError("boom")
    spans = list(live.iter_run(run.id, "spans"))
    search, failed = spans
    started, ended = (dt.datetime.fromisoformat(search[k]) for k in ("started_at", "ended_at"))
    assert before <= started and (ended - started) >= dt.timedelta(milliseconds=50)
    assert search["output"] == {"hits": 3} and search["input"] == {"q": "rates"}
    assert failed["attributes"]["error"] == "KeyError: 'boom'" and failed["ended_at"] >= failed["started_at"]

    async def main():
        async with groundrule.AsyncClient(base_url=live_server.url, api_key=acme_key[1]) as client:
            async with client.run(agent_name="research-agent") as arun:
                async with arun.span("retrieval", "vector-search") as aspan:
                    aspan.output = ["chunk-1"]
            return [s async for s in client.iter_run(arun.id, "spans")]

    (timed,) = asyncio.run(main())
    assert timed["kind"] == "retrieval" and timed["output"] == ["chunk-1"]
    assert timed["started_at"] <= timed["ended_at"]
