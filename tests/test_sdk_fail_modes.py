"""What the SDK does when the server is down, slow, overloaded or refuses: fail open or closed,
and which failures are retried. A small stdlib HTTP server plays the misbehaving Groundrule."""

import asyncio
import logging
import socket

import pytest
from sdk_support import SERVER_ERROR, FakeGroundrule

import groundrule
from groundrule import (
    ConfigurationError,
    GroundruleAPIError,
    GroundruleUnavailable,
    PolicyViolationError,
)

UNREACHABLE = "Groundrule unreachable; failing open"
ALLOW = {"action": "allow", "phase": "before_workflow", "reason": "Grounding rules stored", "evaluations": []}
STARTED = (201, {"id": 7, "status": "running", "decision": ALLOW})


def client(url: str, **options) -> groundrule.Client:
    options.setdefault("backoff_base", 0.01)
    return groundrule.Client(base_url=url, api_key="gr_test", **options)


@pytest.fixture
def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def warnings_logged(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "groundrule" and r.levelno == logging.WARNING]


def test_fail_open_when_the_server_cannot_be_reached(closed_port_url, caplog):
    with client(closed_port_url) as gr, gr.run(agent_name="research-agent") as run:
        decision = run.record_grounding(grounding_scores=[0.1], citations=[])
        span = run.record_tool_call("search")

    assert run.id is None
    assert run.failed_open
    assert decision.action == "allow" and decision.reason == UNREACHABLE and decision.failed_open
    assert span is None
    assert [d.phase for d in run.decisions] == ["before_workflow", "mid_execution"]
    assert len(warnings_logged(caplog)) == 1
    assert "failing open" in warnings_logged(caplog)[0]


def test_fail_closed_raises_when_the_server_cannot_be_reached(closed_port_url):
    with client(closed_port_url, fail_open=False) as gr:
        with pytest.raises(GroundruleUnavailable, match="ConnectError"):
            with gr.run(agent_name="research-agent"):
                pytest.fail("the run must not start")


def test_server_errors_are_retried_then_fail_open(caplog):
    with FakeGroundrule({}) as server, client(server.url, max_retries=2) as gr:
        with gr.run(agent_name="research-agent") as run:
            assert server.count("runs/") == 3  # the first try and two retries
            decision = run.record_grounding(grounding_scores=[0.9])

    assert decision.reason == UNREACHABLE
    assert len(server.requests) == 3  # once failed open, nothing more is sent
    assert any("answered 500" in m for m in warnings_logged(caplog))


def test_server_errors_fail_closed_after_retries():
    with FakeGroundrule({}) as server, client(server.url, fail_open=False, max_retries=1) as gr:
        with pytest.raises(GroundruleUnavailable) as caught:
            with gr.run(agent_name="research-agent"):
                pass
    assert caught.value.status_code == 500
    assert server.count("runs/") == 2


def test_recovers_when_a_retry_succeeds():
    with (
        FakeGroundrule(
            {
                "runs/": [SERVER_ERROR, (503, {}), STARTED],
                "runs/7/complete/": [
                    (200, {"run_id": 7, "status": "completed", "decision": {**ALLOW, "phase": "after_workflow"}})
                ],
            }
        ) as server,
        client(server.url) as gr,
    ):
        with gr.run(agent_name="research-agent") as run:
            pass
    assert run.id == 7 and run.status == "completed"
    assert server.count("runs/") == 3
    assert server.requests[0][1]["authorization"] == "Bearer gr_test"
    assert server.requests[0][2] == {"agent_name": "research-agent"}


def test_starting_a_run_is_not_retried_when_the_server_may_have_acted():
    # A 502 or a read timeout may come after the run was created; retrying would create a second one.
    with FakeGroundrule({"runs/": [(502, {})]}) as server, client(server.url) as gr:
        with gr.run(agent_name="research-agent") as run:
            pass
    assert run.failed_open
    assert server.count("runs/") == 1


def test_a_grounding_report_is_not_resent_after_a_timeout():
    # Re-sending would count its citations twice.
    with FakeGroundrule({"runs/": [STARTED], "*/grounding/": [(200, {}, {}, 1.0)]}) as server:
        with client(server.url, timeout=0.3) as gr, gr.run(agent_name="research-agent") as run:
            decision = run.record_grounding(grounding_scores=[0.9], citations=["A"])
    assert decision.reason == UNREACHABLE
    assert server.count("/grounding/") == 1
    assert server.count("/complete/") == 0


def test_spans_are_retried_on_ambiguous_failures():
    span = (201, {"id": 1, "kind": "tool", "name": "search"})
    with FakeGroundrule(
        {"runs/": [STARTED], "*/spans/": [(502, {}), (504, {}), span], "*/complete/": [(409, {"detail": "done"})]}
    ) as server:
        with client(server.url) as gr, gr.run(agent_name="research-agent") as run:
            assert run.record_tool_call("search") == span[1]
    assert server.count("/spans/") == 3


def test_retry_after_is_respected_when_small_and_ends_retries_when_large():
    with FakeGroundrule({"runs/": [(429, {}, {"Retry-After": "0"}), STARTED], "*/complete/": [(409, {})]}) as server:
        with client(server.url, fail_open=False) as gr, gr.run(agent_name="a", enforce_policy=False) as run:
            run.set_result(None)
    assert run.id == 7

    with FakeGroundrule({"runs/": [(503, {}, {"Retry-After": "3600"})]}) as server:
        with client(server.url, fail_open=False) as gr:
            with pytest.raises(GroundruleUnavailable):
                gr.run(agent_name="a").__enter__()
    assert server.count("runs/") == 1


def test_a_second_completion_is_swallowed():
    with (
        FakeGroundrule(
            {"runs/": [STARTED], "*/complete/": [(409, {"detail": "Run 7 is already completed"})]}
        ) as server,
        client(server.url) as gr,
    ):
        with gr.run(agent_name="research-agent") as run:
            pass
    assert server.count("/complete/") == 1
    assert run.last_decision.phase == "before_workflow"


def test_a_completed_run_accepts_no_more_reports():
    with FakeGroundrule({"runs/": [STARTED], "*/complete/": [(409, {})]}) as server, client(server.url) as gr:
        with gr.run(agent_name="research-agent") as run:
            pass
        with pytest.raises(RuntimeError, match="already completed"):
            run.record_grounding(grounding_scores=[0.9])
    assert server.count("/grounding/") == 0


def test_the_original_exception_is_not_masked_when_completion_fails():
    with FakeGroundrule({"runs/": [STARTED]}) as server, client(server.url, fail_open=False) as gr:
        with pytest.raises(KeyError):
            with gr.run(agent_name="research-agent"):
                raise KeyError("missing document")
    assert server.requests[-1][2] == {"error": "KeyError: 'missing document'"}


def test_a_block_at_start_completes_the_run_before_raising():
    block = {"action": "block", "phase": "before_workflow", "reason": "Agent not allowed", "evaluations": []}
    done = (200, {"run_id": 7, "status": "blocked", "decision": {**block, "phase": "after_workflow"}})
    with (
        FakeGroundrule(
            {"runs/": [(201, {"id": 7, "status": "blocked", "decision": block})], "*/complete/": [done]}
        ) as server,
        client(server.url) as gr,
    ):
        with pytest.raises(PolicyViolationError, match="Agent not allowed"):
            with gr.run(agent_name="research-agent"):
                pytest.fail("a block at start must stop the workflow")
    assert server.count("/complete/") == 1


def test_client_errors_are_raised_not_retried_even_when_failing_open():
    with FakeGroundrule({"runs/": [(400, {"agent_name": ["This field may not be blank."]})]}) as server:
        with client(server.url) as gr, pytest.raises(GroundruleAPIError) as caught:
            with gr.run(agent_name=""):
                pass
    assert caught.value.status_code == 400
    assert caught.value.body == {"agent_name": ["This field may not be blank."]}
    assert server.count("runs/") == 1


def test_check_grounding_posts_text_and_sources():
    verdict = {"verdict": "supported", "score": 0.93}
    with FakeGroundrule({"grounding/check/": [(200, verdict)]}) as server, client(server.url) as gr:
        assert gr.check_grounding("Rates rose in 2008.", [{"id": "fed", "text": "Rates rose."}]) == verdict
    assert server.requests[0][2] == {"text": "Rates rose in 2008.", "sources": [{"id": "fed", "text": "Rates rose."}]}


def test_check_grounding_sends_only_the_options_set():
    verdict = {"grounded": True}
    with FakeGroundrule({"grounding/check/": [(200, verdict)]}) as server, client(server.url) as gr:
        gr.check_grounding(
            "Rates rose.",
            ["Rates rose."],
            entailment_threshold=0.7,
            nli_escalation="llm",
            nli_escalation_model="gpt-4o-mini",
            nli_escalation_max_claims=None,
        )
        with pytest.raises(TypeError, match="nli_escalaton"):
            gr.check_grounding("Rates rose.", ["Rates rose."], nli_escalaton="llm")  # type: ignore[call-arg]
    assert server.requests[0][2] == {
        "text": "Rates rose.",
        "sources": ["Rates rose."],
        "entailment_threshold": 0.7,
        "nli_escalation": "llm",
        "nli_escalation_model": "gpt-4o-mini",
    }
    assert server.count("grounding/check/") == 1  # the misspelt option never left the client


@pytest.mark.parametrize("sources", ["Rates rose.", {"id": "fed", "text": "Rates rose."}], ids=["str", "mapping"])
def test_check_grounding_refuses_a_single_source_not_in_a_list(sources):
    # Iterated, a lone string went out as one source per character (a mapping as one per key).
    with FakeGroundrule({"grounding/check/": [(200, {"grounded": True})]}) as server, client(server.url) as gr:
        with pytest.raises(TypeError, match="sources must be a list"):
            gr.check_grounding("Rates rose.", sources)  # type: ignore[arg-type]
    assert server.count("grounding/check/") == 0


def test_missing_configuration_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("GROUNDRULE_URL", raising=False)
    monkeypatch.delenv("GROUNDRULE_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="GROUNDRULE_URL"):
        groundrule.Client()
    monkeypatch.setenv("GROUNDRULE_URL", "http://127.0.0.1:9")
    with pytest.raises(ConfigurationError, match="GROUNDRULE_API_KEY"):
        groundrule.Client()
    with pytest.raises(ConfigurationError, match="GROUNDRULE_API_KEY"):
        groundrule.AsyncClient()


# -- the async client ------------------------------------------------------------------------


def async_client(url: str, **options) -> groundrule.AsyncClient:
    return groundrule.AsyncClient(base_url=url, api_key="gr_test", backoff_base=0.01, **options)


def test_async_fail_open_when_the_server_cannot_be_reached(closed_port_url, caplog):
    async def main():
        async with async_client(closed_port_url) as gr, gr.run(agent_name="research-agent") as run:
            return await run.record_grounding(grounding_scores=[0.1])

    decision = asyncio.run(main())
    assert decision.allowed and decision.reason == UNREACHABLE
    assert any("failing open" in m for m in warnings_logged(caplog))


def test_async_fail_closed_raises(closed_port_url):
    async def main():
        async with async_client(closed_port_url, fail_open=False) as gr, gr.run(agent_name="research-agent"):
            pass

    with pytest.raises(GroundruleUnavailable):
        asyncio.run(main())


def test_async_server_errors_are_retried_then_fail_open():
    async def main(url):
        async with async_client(url, max_retries=2) as gr, gr.run(agent_name="research-agent") as run:
            return await run.record_grounding(grounding_scores=[0.9])

    with FakeGroundrule({}) as server:
        decision = asyncio.run(main(server.url))
    assert decision.reason == UNREACHABLE
    assert server.count("runs/") == 3
