"""The LLM judge through the real provider SDKs, against a local server speaking their wire formats.

No database and no internet: ``python -m pytest -p no:django tests/test_llm_judge_providers.py``.
Every test runs for OpenAI, Anthropic and Groq: the official client (openai / anthropic / groq SDK)
builds and sends the HTTP request, tests/fake_llm_server.py answers it.
"""

from __future__ import annotations

import importlib
import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.conf import settings

from judges.llm import (
    BASE_URL_SECRET,
    JudgeResult,
    clear_client_cache,
    estimate_cost,
    judge,
)
from judges.llm import providers as providers_module

try:
    from tests.fake_llm_server import (
        FakeLLMServer,
        fake_llm_server,
        fake_llm_server_fixture,
    )
except ImportError:  # tests/ on sys.path rather than the project root
    from fake_llm_server import (  # type: ignore[no-redef]  # noqa: F401
        FakeLLMServer,
        fake_llm_server,
        fake_llm_server_fixture,
    )

# A second, module-scoped server built by the fixture factory, with fixed token usage.
shared_llm_server = fake_llm_server_fixture(scope="module", usage=(120, 4))

MODELS = {
    "openai": "gpt-4o-mini",
    "anthropic": "claude-sonnet-4-20250514",
    "groq": "llama-3.1-8b-instant",
}
PATHS = {
    "openai": "/v1/chat/completions",
    "anthropic": "/v1/messages",
    "groq": "/openai/v1/chat/completions",
}
USER_AGENTS = {"openai": "OpenAI/Python", "anthropic": "Anthropic/Python", "groq": "Groq/Python"}

SOURCES = [
    {
        "id": "fed-2023",
        "text": "In March 2023 the Federal Reserve raised its benchmark interest rate by 25 basis points "
        "to fight persistent inflation.",
    },
    {"id": "imf-2023", "text": "The IMF projected global growth of 2.8 percent for 2023."},
]
CITATIONS = ["Federal Reserve Report", "IMF Analysis"]
GROUNDED = "The Federal Reserve raised its benchmark interest rate by 25 basis points in March 2023 to fight inflation."
UNGROUNDED = "Bitcoin will surpass one million dollars next Tuesday, analysts at Goldman Sachs confirmed yesterday."

provider_param = pytest.mark.parametrize("provider", ["openai", "anthropic", "groq"])

# The anthropic SDK warns that the seed's example model (claude-sonnet-4-20250514) is deprecated.
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")


@pytest.fixture(autouse=True)
def _loopback_provider_allowed(monkeypatch):
    """The fake provider listens on loopback, which the outbound guard (core/outbound.py) refuses
    unless the operator allows it: with Django configured from settings, without it from the env."""
    monkeypatch.setenv("OUTBOUND_ALLOWED_HOSTS", "127.0.0.1")
    if settings.configured:
        monkeypatch.setattr(settings, "OUTBOUND_ALLOWED_HOSTS", ["127.0.0.1"], raising=False)


@pytest.fixture(autouse=True)
def _fresh_clients():
    clear_client_cache()
    yield
    clear_client_cache()


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch):
    # The judge passes keys explicitly; make sure nothing leaks in from the environment either.
    for name in (*BASE_URL_SECRET.values(), "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GROQ_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def run(server: FakeLLMServer, provider: str, **overrides) -> JudgeResult:
    kwargs = dict(
        model=MODELS[provider],
        output=GROUNDED,
        citations=CITATIONS,
        sources=SOURCES,
        criteria="",
        api_key=server.key_for(provider),
        base_url=server.base_url_for(provider),
        timeout=5.0,
        max_retries=0,
    )
    kwargs.update(overrides)
    return judge(**kwargs)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------------------------------------
# Scores


@provider_param
def test_grounded_answer_scores_high(fake_llm_server, provider):
    result = run(fake_llm_server, provider, output=GROUNDED)
    assert result.status == "ok"
    assert result.score == pytest.approx(0.9)
    assert result.provider == provider and result.model == MODELS[provider]
    assert result.raw_text == "SCORE: 0.9"
    assert result.error == ""
    assert result.attempts == 1
    assert result.latency_ms > 0


@provider_param
def test_ungrounded_answer_scores_low(fake_llm_server, provider):
    result = run(fake_llm_server, provider, output=UNGROUNDED)
    assert result.status == "ok"
    assert result.score == pytest.approx(0.2)


@provider_param
def test_programmed_reply_is_parsed_tolerantly(fake_llm_server, provider):
    fake_llm_server.reply_with("Most claims are supported; one date is off.\n**Score:** 7/10")
    result = run(fake_llm_server, provider)
    assert (result.status, result.score) == ("ok", pytest.approx(0.7))


# ---------------------------------------------------------------------------------------------
# What goes over the wire


@provider_param
def test_request_uses_the_real_sdk_model_auth_and_prompt(fake_llm_server, provider):
    result = run(fake_llm_server, provider, criteria="Dates and amounts must match the sources exactly.")
    assert result.status == "ok"
    [request] = fake_llm_server.requests
    key = fake_llm_server.key_for(provider)

    assert request.provider == provider
    assert request.path == PATHS[provider]
    assert request.headers["user-agent"].startswith(USER_AGENTS[provider])  # the official SDK sent it
    assert request.json["model"] == MODELS[provider]
    assert 0 < request.json["max_tokens"] <= 64

    if provider == "anthropic":
        # anthropic 2.x sends the API key as a bearer token (older SDKs used x-api-key)
        assert request.headers.get("authorization") == f"Bearer {key}" or request.headers.get("x-api-key") == key
        assert request.headers["anthropic-version"]
        assert isinstance(request.json["system"], str)  # system prompt is top-level in the Messages API
        assert [m["role"] for m in request.json["messages"]] == ["user"]
        system, user = request.json["system"], request.json["messages"][0]["content"]
    else:
        assert request.headers["authorization"] == f"Bearer {key}"
        assert request.json["temperature"] == 0
        assert [m["role"] for m in request.json["messages"]] == ["system", "user"]
        system, user = (m["content"] for m in request.json["messages"])

    assert "Source support" in system and "SCORE:" in system
    assert "Dates and amounts must match the sources exactly." in system
    assert GROUNDED in user
    for citation in CITATIONS:
        assert citation in user
    for source in SOURCES:
        assert source["text"] in user and source["id"] in user


@provider_param
def test_tokens_and_cost_recorded(fake_llm_server, provider):
    fake_llm_server.usage = (500, 10)
    result = run(fake_llm_server, provider)
    assert (result.input_tokens, result.output_tokens) == (500, 10)
    assert result.cost_usd == pytest.approx(estimate_cost(MODELS[provider], 500, 10))
    expected_range = {"openai": (5e-5, 2e-4), "anthropic": (1e-3, 3e-3), "groq": (0, 5e-5)}[provider]
    assert expected_range[0] < result.cost_usd < expected_range[1]  # docs/grounding-policies.md, "Cost"


@provider_param
def test_token_counts_come_from_the_response_usage(fake_llm_server, provider):
    result = run(fake_llm_server, provider)
    request = fake_llm_server.last_request
    assert result.input_tokens == -(-len(request.prompt) // 4)  # the fake's estimate, read back
    assert result.output_tokens == 3


@provider_param
def test_unknown_model_price_leaves_cost_empty(fake_llm_server, provider):
    model = {"openai": "gpt-5-experimental", "anthropic": "claude-future-1", "groq": "llama-9-1t"}[provider]
    result = run(fake_llm_server, provider, model=model)
    assert result.status == "ok"
    assert result.input_tokens and result.cost_usd is None
    assert fake_llm_server.last_request.json["model"] == model


# ---------------------------------------------------------------------------------------------
# Graceful degradation (docs/grounding-policies.md)


@provider_param
@pytest.mark.parametrize("api_key", [None, "", "   "])
def test_no_api_key_skips_without_any_request(fake_llm_server, provider, api_key):
    result = run(fake_llm_server, provider, api_key=api_key)
    assert result.status == "no_api_key"
    assert result.score is None
    assert result.attempts == 0
    assert fake_llm_server.request_count == 0


@provider_param
def test_http_500_is_an_error_not_an_exception(fake_llm_server, provider):
    fake_llm_server.fail_with(500)
    key = fake_llm_server.key_for(provider)
    result = run(fake_llm_server, provider, max_retries=0)
    assert result.status == "error"
    assert result.score is None
    assert "500" in result.error and provider in result.error
    assert key not in result.error
    assert len(result.error) <= 200
    assert fake_llm_server.request_count == 1


@provider_param
def test_non_json_error_page_is_not_echoed(fake_llm_server, provider):
    fake_llm_server.fail_with(502, body=b"<html><body>internal admin page: secret-stuff</body></html>")
    result = run(fake_llm_server, provider)
    assert result.status == "error"
    assert "502" in result.error
    assert "secret-stuff" not in result.error and "<html>" not in result.error


@provider_param
def test_wrong_key_is_a_401_error_without_the_key_in_the_message(fake_llm_server, provider):
    wrong = {"openai": "sk-wrong-key-zq7w9876", "anthropic": "sk-ant-wrong-zq7w9876", "groq": "gsk_wrong_zq7w9876"}[
        provider
    ]
    result = run(fake_llm_server, provider, api_key=wrong, max_retries=3)
    assert result.status == "error"
    assert "401" in result.error
    assert wrong not in result.error and "9876" not in result.error  # not even the masked echo
    assert fake_llm_server.request_count == 1  # an auth failure is not retried
    assert json.dumps(result.to_metadata()).find(wrong) == -1


@provider_param
def test_timeout_when_the_provider_is_slower_than_the_budget(fake_llm_server, provider):
    # the SDK's first import (anthropic: ~1 s on this machine) is not what this test times
    importlib.import_module(provider)
    fake_llm_server.delay_for(3.0)
    started = time.perf_counter()
    result = run(fake_llm_server, provider, timeout=0.4, max_retries=2)
    elapsed = time.perf_counter() - started
    assert result.status == "timeout"
    assert result.score is None
    assert elapsed < 1.5  # the budget is total: no retry after a timeout
    assert fake_llm_server.request_count == 1


@provider_param
def test_unparseable_reply_defaults_to_neutral(fake_llm_server, provider):
    fake_llm_server.reply_with("I am unable to assess this output.")
    result = run(fake_llm_server, provider)
    assert result.status == "unparseable"
    assert result.score == 0.5
    assert result.raw_text == "I am unable to assess this output."
    assert result.input_tokens is not None


@provider_param
def test_empty_reply_is_unparseable(fake_llm_server, provider):
    fake_llm_server.reply_with("")
    result = run(fake_llm_server, provider)
    assert (result.status, result.score) == ("unparseable", 0.5)


@provider_param
def test_malformed_response_body_is_an_error(fake_llm_server, provider):
    fake_llm_server.malformed_body(b'{"id": "chatcmpl-broken", "choices": [')
    result = run(fake_llm_server, provider)
    assert result.status == "error"
    assert result.score is None


@provider_param
def test_connection_refused_is_an_error(provider):
    port = free_port()
    base = f"http://127.0.0.1:{port}" + ("/v1" if provider == "openai" else "")
    result = judge(
        model=MODELS[provider],
        output=GROUNDED,
        citations=CITATIONS,
        sources=SOURCES,
        api_key="sk-some-key-123456",
        base_url=base,
        timeout=2.0,
        max_retries=1,
    )
    assert result.status == "error"
    assert "connection" in result.error.lower()
    assert result.attempts == 2


def test_unsupported_model_is_an_error_without_request(fake_llm_server):
    result = run(fake_llm_server, "openai", model="gemini-1.5-pro")
    assert result.status == "error"
    assert result.provider is None
    assert "gemini-1.5-pro" in result.error
    assert fake_llm_server.request_count == 0


# ---------------------------------------------------------------------------------------------
# Retries and the time budget


@provider_param
def test_max_retries_honoured_on_5xx(fake_llm_server, provider):
    fake_llm_server.fail_with(500)
    result = run(fake_llm_server, provider, max_retries=2)
    assert result.status == "error"
    assert result.attempts == 3
    assert fake_llm_server.request_count == 3
    retry_counts = [r.headers.get("x-stainless-retry-count") for r in fake_llm_server.requests]
    assert retry_counts == ["0", "0", "0"]  # retried by the judge, not by the SDK


@provider_param
def test_a_retry_recovers_from_a_transient_failure(fake_llm_server, provider):
    fake_llm_server.fail_with(503, times=1)
    result = run(fake_llm_server, provider, max_retries=1)
    assert (result.status, result.score, result.attempts) == ("ok", pytest.approx(0.9), 2)
    assert fake_llm_server.request_count == 2


@provider_param
def test_no_retry_when_max_retries_is_zero(fake_llm_server, provider):
    fake_llm_server.fail_with(429, times=1)
    result = run(fake_llm_server, provider, max_retries=0)
    assert result.status == "error" and "429" in result.error
    assert fake_llm_server.request_count == 1


@provider_param
def test_rate_limit_is_retried(fake_llm_server, provider):
    fake_llm_server.fail_with(429)
    result = run(fake_llm_server, provider, max_retries=1)
    assert result.status == "error" and "429" in result.error
    assert fake_llm_server.request_count == 2


@provider_param
def test_retry_after_longer_than_the_budget_is_not_waited_for(fake_llm_server, provider):
    fake_llm_server.fail_with(429, headers={"retry-after-ms": "30000"})
    started = time.perf_counter()
    result = run(fake_llm_server, provider, timeout=1.0, max_retries=3)
    assert time.perf_counter() - started < 1.0
    assert result.status == "error"
    assert fake_llm_server.request_count == 1


@provider_param
def test_server_can_forbid_a_retry(fake_llm_server, provider):
    fake_llm_server.fail_with(500, headers={"x-should-retry": "false"})
    run(fake_llm_server, provider, max_retries=2)
    assert fake_llm_server.request_count == 1


# ---------------------------------------------------------------------------------------------
# Configuration, caching, concurrency


@provider_param
def test_base_url_from_the_sdk_environment_variable(fake_llm_server, provider, monkeypatch):
    monkeypatch.setenv(BASE_URL_SECRET[provider], fake_llm_server.base_url_for(provider))
    result = run(fake_llm_server, provider, base_url=None)
    assert result.status == "ok"
    assert fake_llm_server.request_count == 1

    # a different environment value is a different client, not a stale cached one
    with FakeLLMServer() as other:
        monkeypatch.setenv(BASE_URL_SECRET[provider], other.base_url_for(provider))
        assert run(other, provider, base_url=None).status == "ok"
        assert other.request_count == 1
    assert fake_llm_server.request_count == 1


@provider_param
def test_clients_are_cached_and_reused(fake_llm_server, provider):
    key, url = fake_llm_server.key_for(provider), fake_llm_server.base_url_for(provider)
    first = providers_module.get_client(provider, key, url, 5.0)
    assert providers_module.get_client(provider, key, url, 5.0) is first
    assert providers_module.get_client(provider, key + "x", url, 5.0) is not first
    assert providers_module.get_client(provider, key, url, 7.0) is not first
    for _ in range(3):
        assert run(fake_llm_server, provider).status == "ok"
    assert fake_llm_server.request_count == 3


def test_client_cache_is_bounded(fake_llm_server, monkeypatch):
    monkeypatch.setattr(providers_module, "CLIENT_CACHE_SIZE", 3)
    for i in range(6):
        providers_module.get_client("groq", f"gsk_key_{i}", fake_llm_server.groq_base_url, 5.0)
    assert len(providers_module._clients) == 3
    assert not any("gsk_key" in repr(k) for k in providers_module._clients)  # keys are hashed


@provider_param
def test_concurrent_judgements_share_a_client_safely(fake_llm_server, provider):
    outputs = [GROUNDED, UNGROUNDED] * 6
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda out: run(fake_llm_server, provider, output=out), outputs))
    assert [r.status for r in results] == ["ok"] * len(outputs)
    assert [r.score for r in results] == [pytest.approx(0.9), pytest.approx(0.2)] * 6
    assert fake_llm_server.request_count == len(outputs)


# ---------------------------------------------------------------------------------------------
# The result


def test_to_metadata_has_fixed_json_ready_keys(fake_llm_server):
    fake_llm_server.usage = (500, 10)
    metadata = run(fake_llm_server, "openai").to_metadata()
    assert list(metadata) == [
        "status",
        "score",
        "model",
        "provider",
        "latency_ms",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "attempts",
        "raw_text",
        "error",
    ]
    assert json.loads(json.dumps(metadata)) == metadata
    assert metadata["status"] == "ok" and metadata["score"] == 0.9
    assert metadata["cost_usd"] == pytest.approx(8.1e-05)

    skipped = run(fake_llm_server, "openai", api_key=None).to_metadata()
    assert list(skipped) == list(metadata)
    assert (skipped["status"], skipped["score"], skipped["cost_usd"]) == ("no_api_key", None, None)
    assert "OPENAI_API_KEY" in skipped["error"]


def test_raw_text_is_truncated(fake_llm_server):
    fake_llm_server.reply_with("x" * 2000 + "\nSCORE: 0.4")
    result = run(fake_llm_server, "openai")
    assert result.score == pytest.approx(0.4)
    assert len(result.raw_text) == 500


def test_judge_never_logs_the_key(fake_llm_server, caplog):
    caplog.set_level("DEBUG")
    fake_llm_server.fail_with(500)
    key = fake_llm_server.key_for("openai")
    run(fake_llm_server, "openai", max_retries=1)
    assert "LLM judge error" in caplog.text
    assert key not in caplog.text


# ---------------------------------------------------------------------------------------------
# The fake server itself (it is reused by the Django-level tests)


def test_fake_accepts_x_api_key_for_anthropic_and_rejects_wrong_keys(fake_llm_server):
    body = {"model": "claude-3-5-haiku-latest", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    url = fake_llm_server.url + "/v1/messages"
    ok = httpx.post(
        url, json=body, headers={"x-api-key": fake_llm_server.key_for("anthropic"), "anthropic-version": "2023-06-01"}
    )
    assert ok.status_code == 200
    assert ok.json()["content"][0]["type"] == "text"
    assert set(ok.json()["usage"]) >= {"input_tokens", "output_tokens"}

    bad = httpx.post(url, json=body, headers={"x-api-key": "nope", "anthropic-version": "2023-06-01"})
    assert bad.status_code == 401
    assert bad.json()["type"] == "error" and bad.json()["error"]["type"] == "authentication_error"

    no_version = httpx.post(url, json=body, headers={"x-api-key": fake_llm_server.key_for("anthropic")})
    assert no_version.status_code == 400


def test_fake_openai_shape_and_paths(fake_llm_server):
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    auth = {"Authorization": f"Bearer {fake_llm_server.key_for('openai')}"}
    for path in ("/v1/chat/completions", "/chat/completions"):
        reply = httpx.post(fake_llm_server.url + path, json=body, headers=auth)
        assert reply.status_code == 200
        data = reply.json()
        assert data["object"] == "chat.completion"
        assert data["choices"][0]["message"]["role"] == "assistant"
        assert set(data["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    wrong = httpx.post(
        fake_llm_server.url + "/v1/chat/completions", json=body, headers={"Authorization": "Bearer sk-nope"}
    )
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "invalid_api_key"
    assert httpx.post(fake_llm_server.url + "/v2/nothing", json=body, headers=auth).status_code == 404


def test_fixture_factory_builds_a_configured_shared_server(shared_llm_server, fake_llm_server):
    assert shared_llm_server.url != fake_llm_server.url
    result = run(shared_llm_server, "groq")
    assert (result.input_tokens, result.output_tokens) == (120, 4)


def test_fake_env_and_secrets_route_every_provider(fake_llm_server):
    secrets = fake_llm_server.secrets()
    assert set(secrets) == {
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GROQ_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "GROQ_BASE_URL",
    }
    for provider, model in MODELS.items():
        result = judge(
            model=model,
            output=GROUNDED,
            citations=CITATIONS,
            sources=SOURCES,
            api_key=secrets[f"{provider.upper()}_API_KEY"],
            base_url=secrets[f"{provider.upper()}_BASE_URL"],
        )
        assert result.status == "ok", (provider, result.error)
    assert {r.provider for r in fake_llm_server.requests} == {"openai", "anthropic", "groq"}
