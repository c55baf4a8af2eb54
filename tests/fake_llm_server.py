"""A local HTTP server that speaks the LLM providers' wire formats, for tests.

The real SDK clients (``openai``, ``anthropic``, ``groq``) are pointed at it, so the real client code
runs end to end (design brief, "Real parts, not mocks"). One server answers all three providers:

=============  ==========================================  =====================================
provider       endpoint                                     SDK base URL to use
=============  ==========================================  =====================================
openai         ``POST /v1/chat/completions`` (also          ``server.openai_base_url``
               ``POST /chat/completions``)                  = ``http://127.0.0.1:PORT/v1``
groq           ``POST /openai/v1/chat/completions``         ``server.groq_base_url`` = ``server.url``
anthropic      ``POST /v1/messages``                        ``server.anthropic_base_url`` = ``server.url``
=============  ==========================================  =====================================

Authentication is checked like the real APIs: ``Authorization: Bearer <key>`` for OpenAI and Groq;
for Anthropic ``x-api-key: <key>`` **or** ``Authorization: Bearer <key>`` (the anthropic 2.x SDK
sends the API key as a bearer token) plus a required ``anthropic-version`` header. A wrong key gets
a 401 with the provider's error JSON (OpenAI's echoes a masked key, as the real one does). The
accepted keys are ``server.keys`` (defaults in ``DEFAULT_KEYS``).

Usage::

    with FakeLLMServer() as server:                     # or the ``fake_llm_server`` pytest fixture
        server.reply_with("SCORE: 0.9")                 # fixed text
        server.reply_with(lambda body: "SCORE: 0.1")    # callable(request json) -> text
        server.fail_with(500, times=1)                  # HTTP error (first request only; None = always)
        server.delay_for(2.0)                           # sleep before answering (timeouts)
        server.malformed_body(b"{not json")             # a 200 whose body is not JSON
        server.requests, server.requests_for("openai")  # RecordedRequest(provider, path, headers, json)

By default it answers like a crude grounding judge (:func:`grounded_responder`): ``SCORE: 0.9`` when
most content words of the ``<output>`` block appear in the ``<source>`` blocks of the prompt, else
``SCORE: 0.2``. Token usage is estimated at 4 characters a token unless ``server.usage`` is set.

For Django-level tests: ``server.env()`` gives the ``*_BASE_URL`` environment variables and
``server.secrets()`` the tenant secrets (keys and base URLs) that route every provider here.

Pure standard library (pytest only for the fixtures), so any test can import it.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_KEYS = {
    "openai": "sk-test-openai-5f3c9a1e7b2d",
    "anthropic": "sk-ant-test-8d1e4b7a2c9f",
    "groq": "gsk_test_2b7e9c4d1a6f",
}

OPENAI_PATHS = ("/v1/chat/completions", "/chat/completions")
GROQ_PATHS = ("/openai/v1/chat/completions",)
ANTHROPIC_PATHS = ("/v1/messages",)

Responder = str | Callable[[Any], str]


# ---------------------------------------------------------------------------------------------
# Reading prompts


def prompt_text(body: Any, *, roles: tuple[str, ...] | None = None) -> str:
    """All prompt text of a chat-completions or messages request body (system first)."""
    if not isinstance(body, dict):
        return ""
    parts: list[str] = []

    def add(content: Any) -> None:
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif isinstance(block, str):
                    parts.append(block)

    if roles is None or "system" in roles:
        add(body.get("system"))
    for message in body.get("messages") or []:
        if isinstance(message, dict) and (roles is None or message.get("role") in roles):
            add(message.get("content"))
    return "\n".join(parts)


def tagged_blocks(text: str, tag: str) -> list[str]:
    """Contents of ``<tag ...>\\n ... \\n</tag>`` blocks, as the judge prompt lays them out."""
    return [m.group(1) for m in re.finditer(rf"<{tag}(?:\s[^>]*)?>\n(.*?)\n</{tag}>", text, re.DOTALL)]


_STOPWORDS = frozenset(
    "the a an and or of to in on for by with at from as is are was were be been it its this that these those "
    "has have had not but than then so such into over under about after before between per".split()
)


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2 and w not in _STOPWORDS}


def overlap_ratio(output: str, sources: list[str]) -> float:
    """Fraction of the output's content words that occur in the sources (1.0 for an empty output)."""
    words = _content_words(output)
    if not words:
        return 1.0
    source_words = _content_words(" ".join(sources))
    return len(words & source_words) / len(words)


def grounded_responder(body: Any, *, threshold: float = 0.6, high: str = "SCORE: 0.9", low: str = "SCORE: 0.2") -> str:
    """A crude judge: ``high`` when the output's words are mostly found in the sources, else ``low``."""
    user = prompt_text(body, roles=("user",))
    outputs = tagged_blocks(user, "output")
    if not outputs:
        return "SCORE: 0.5"
    sources = tagged_blocks(user, "source")
    return high if overlap_ratio(outputs[-1], sources) >= threshold else low


# ---------------------------------------------------------------------------------------------
# Recorded requests


@dataclass
class RecordedRequest:
    provider: str
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    json: Any
    raw: bytes = b""
    received_at: float = field(default_factory=time.time)

    @property
    def model(self) -> str | None:
        return self.json.get("model") if isinstance(self.json, dict) else None

    @property
    def prompt(self) -> str:
        return prompt_text(self.json)

    @property
    def bearer(self) -> str | None:
        auth = self.headers.get("authorization", "")
        return auth[7:] if auth.lower().startswith("bearer ") else None


# ---------------------------------------------------------------------------------------------
# Provider response shapes


def _error_body(provider: str, status: int, message: str | None = None, *, presented_key: str = "") -> dict:
    if provider == "anthropic":
        kinds = {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
            413: "request_too_large",
            429: "rate_limit_error",
            529: "overloaded_error",
        }
        kind = kinds.get(status, "api_error" if status >= 500 else "invalid_request_error")
        default = {401: "invalid x-api-key", 429: "Number of requests has exceeded your rate limit"}.get(
            status, "Internal server error" if status >= 500 else "Invalid request"
        )
        return {
            "type": "error",
            "error": {"type": kind, "message": message or default},
            "request_id": f"req_fake{uuid.uuid4().hex[:20]}",
        }
    if status == 401:
        if provider == "openai":
            masked = f"{presented_key[:3]}****{presented_key[-4:]}" if len(presented_key) > 8 else "****"
            default = (
                f"Incorrect API key provided: {masked}. You can find your API key at "
                "https://platform.openai.com/account/api-keys."
            )
        else:
            default = "Invalid API Key"
        return {
            "error": {
                "message": message or default,
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        }
    if status == 429:
        return {
            "error": {
                "message": message or "Rate limit reached for requests",
                "type": "requests",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        }
    if status >= 500:
        return {
            "error": {
                "message": message or "The server had an error while processing your request. Sorry about that!",
                "type": "server_error",
                "param": None,
                "code": None,
            }
        }
    return {
        "error": {"message": message or "Invalid request", "type": "invalid_request_error", "param": None, "code": None}
    }


def _chat_completion(provider: str, model: str, text: str, usage: tuple[int, int]) -> dict:
    body = {
        "id": f"chatcmpl-fake{uuid.uuid4().hex[:20]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": usage[0] + usage[1]},
        "system_fingerprint": "fp_fake",
    }
    if provider == "groq":
        body["x_groq"] = {"id": f"req_fake{uuid.uuid4().hex[:20]}"}
    return body


def _anthropic_message(model: str, text: str, usage: tuple[int, int]) -> dict:
    return {
        "id": f"msg_fake{uuid.uuid4().hex[:20]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def _estimate_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


# ---------------------------------------------------------------------------------------------
# The server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0] or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-request-id", f"req_fake{uuid.uuid4().hex[:12]}")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, OSError):
            self.close_connection = True  # the client gave up (e.g. timed out)

    def do_GET(self) -> None:
        self._read_body()
        self._send(404, {"error": {"message": f"Unknown path {self.path}", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        fake: FakeLLMServer = self.server.fake
        raw = self._read_body()
        path = self.path.split("?", 1)[0]
        if path in GROQ_PATHS:
            provider = "groq"
        elif path in ANTHROPIC_PATHS:
            provider = "anthropic"
        elif path in OPENAI_PATHS:
            provider = "openai"
        else:
            self._send(404, {"error": {"message": f"Unknown path {path}", "type": "invalid_request_error"}})
            return
        try:
            body = json.loads(raw.decode("utf-8")) if raw else None
        except (UnicodeDecodeError, ValueError):
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake._record(RecordedRequest(provider, "POST", path, headers, body, raw))
        status, payload, extra = fake._respond(provider, headers, body)
        self._send(status, payload, extra)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeLLMServer


class FakeLLMServer:
    """See the module docstring. Thread-safe; start with ``start()`` or ``with``."""

    def __init__(
        self,
        *,
        keys: dict[str, str] | None = None,
        responder: Responder | None = None,
        usage: tuple[int, int] | None = None,
        retry_after_ms: int | None = 10,
    ) -> None:
        self.keys = dict(DEFAULT_KEYS if keys is None else keys)
        self.usage = usage
        self.retry_after_ms = retry_after_ms
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._requests: list[RecordedRequest] = []
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._default_responder: Responder = responder if responder is not None else grounded_responder
        self.reset()

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> FakeLLMServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self._thread.name = f"fake-llm-server:{self.port}"
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in a delay
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- addresses --------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeLLMServer is not running")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    @property
    def groq_base_url(self) -> str:
        return self.url

    def base_url_for(self, provider: str) -> str:
        return {"openai": self.openai_base_url, "anthropic": self.anthropic_base_url, "groq": self.groq_base_url}[
            provider
        ]

    def key_for(self, provider: str) -> str:
        return self.keys[provider]

    def env(self) -> dict[str, str]:
        """Environment variables that point each SDK here (e.g. for ``monkeypatch.setenv``)."""
        return {
            "OPENAI_BASE_URL": self.openai_base_url,
            "ANTHROPIC_BASE_URL": self.anthropic_base_url,
            "GROQ_BASE_URL": self.groq_base_url,
        }

    def secrets(self) -> dict[str, str]:
        """Tenant secrets (keys and base URLs) that route every provider to this server."""
        return {
            "OPENAI_API_KEY": self.keys["openai"],
            "ANTHROPIC_API_KEY": self.keys["anthropic"],
            "GROQ_API_KEY": self.keys["groq"],
            **self.env(),
        }

    # -- programming the replies --------------------------------------------------------------

    def reset(self) -> None:
        """Forget recorded requests and go back to the default behaviour."""
        with self._lock:
            self._requests.clear()
            self.responder: Responder = self._default_responder
            self._error: tuple[int, Any, dict[str, str]] | None = None
            self._error_times: int | None = None
            self._delay = 0.0
            self._delay_times: int | None = None
            self._malformed: bytes | None = None
            self._malformed_times: int | None = None

    def reply_with(self, responder: Responder) -> None:
        """Answer with this text, or with ``responder(request_json)``."""
        with self._lock:
            self.responder = responder

    def fail_with(
        self, status: int, *, times: int | None = None, body: Any = None, headers: dict[str, str] | None = None
    ) -> None:
        """Answer the next ``times`` requests (``None``: all) with HTTP ``status`` and the provider's error JSON."""
        with self._lock:
            self._error = (status, body, dict(headers or {}))
            self._error_times = times

    def delay_for(self, seconds: float, *, times: int | None = None) -> None:
        """Sleep ``seconds`` before answering the next ``times`` requests (``None``: all)."""
        with self._lock:
            self._delay = float(seconds)
            self._delay_times = times

    def malformed_body(self, body: bytes = b'{"id": "broken", "choices": [', *, times: int | None = None) -> None:
        """Answer 200 with this (non-JSON) body."""
        with self._lock:
            self._malformed = body
            self._malformed_times = times

    # -- inspection ---------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_for(self, provider: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.provider == provider]

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def last_request(self) -> RecordedRequest | None:
        with self._lock:
            return self._requests[-1] if self._requests else None

    # -- internals ----------------------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    @staticmethod
    def _take(times: int | None) -> tuple[bool, int | None]:
        if times is None:
            return True, None
        if times <= 0:
            return False, 0
        return True, times - 1

    def _presented_key(self, provider: str, headers: dict[str, str]) -> str:
        auth = headers.get("authorization", "")
        bearer = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
        if provider == "anthropic":
            return headers.get("x-api-key", "").strip() or bearer
        return bearer

    def _respond(self, provider: str, headers: dict[str, str], body: Any) -> tuple[int, Any, dict[str, str]]:
        with self._lock:
            apply_delay, self._delay_times = (
                self._take(self._delay_times) if self._delay else (False, self._delay_times)
            )
            delay = self._delay
            error = None
            if self._error is not None:
                hit, self._error_times = self._take(self._error_times)
                error = self._error if hit else None
            malformed = None
            if self._malformed is not None:
                hit, self._malformed_times = self._take(self._malformed_times)
                malformed = self._malformed if hit else None
            responder = self.responder
            expected_key = self.keys.get(provider)
            retry_after_ms = self.retry_after_ms

        if apply_delay and delay > 0 and self._stopping.wait(delay):
            return 503, _error_body(provider, 503, "shutting down"), {}

        retry_headers = {"retry-after-ms": str(retry_after_ms)} if retry_after_ms is not None else {}

        presented = self._presented_key(provider, headers)
        if not presented or presented != expected_key:
            return 401, _error_body(provider, 401, presented_key=presented), {}

        if error is not None:
            status, custom_body, extra_headers = error
            payload = custom_body if custom_body is not None else _error_body(provider, status)
            return (
                status,
                payload,
                {**(retry_headers if status in (408, 409, 429) or status >= 500 else {}), **extra_headers},
            )

        problem = self._validate(provider, headers, body)
        if problem:
            return 400, _error_body(provider, 400, problem), {}

        if malformed is not None:
            return 200, malformed, {}

        try:
            text = responder(body) if callable(responder) else str(responder)
        except Exception as err:  # a broken test responder is a 500, like a broken provider
            return 500, _error_body(provider, 500, f"responder failed: {err!r}"), {}

        usage = self.usage or (_estimate_tokens(prompt_text(body)), _estimate_tokens(text))
        model = body["model"]
        if provider == "anthropic":
            return 200, _anthropic_message(model, text, usage), {"request-id": f"req_fake{uuid.uuid4().hex[:12]}"}
        return 200, _chat_completion(provider, model, text, usage), {}

    @staticmethod
    def _validate(provider: str, headers: dict[str, str], body: Any) -> str | None:
        if not isinstance(body, dict):
            return "Request body must be a JSON object"
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "model: field required"
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return "messages: field required"
        if provider == "anthropic":
            if not headers.get("anthropic-version"):
                return "anthropic-version: header is required"
            if not isinstance(body.get("max_tokens"), int):
                return "max_tokens: field required"
            if any(isinstance(m, dict) and m.get("role") == "system" for m in messages):
                return 'messages: Unexpected role "system"; use the top-level system parameter'
        return None


# ---------------------------------------------------------------------------------------------
# pytest fixtures (import the names into a test module or a conftest to use them)

try:
    import pytest
except ImportError:  # pragma: no cover - the module works without pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    def fake_llm_server_fixture(scope: str = "function", **options: Any):
        """A pytest fixture yielding a running :class:`FakeLLMServer` built with ``options``."""

        @pytest.fixture(scope=scope)
        def _fixture():
            with FakeLLMServer(**options) as server:
                yield server

        return _fixture

    fake_llm_server = fake_llm_server_fixture()
