"""Outbound requests guarded (issue 14 item 6): core/outbound.py at save time and at connect time.

A listener on loopback stands for what must never be reached (a database admin page, a metadata
service): every test asserts it saw no connection. The provider calls go through the real SDKs.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django_scopes import scope, scopes_disabled

from core import outbound
from governance.models import Evaluation
from judges.llm import clear_client_cache, judge
from tenants import services as tenant_services
from tenants.audit import Actor
from tenants.models import TenantSecret

ROOT = Path(__file__).resolve().parents[1]

SYSTEM = Actor.system("tests")


class Listener:
    """A TCP listener on 127.0.0.1 that counts connections (and answers nothing useful)."""

    def __init__(self, host="127.0.0.1"):
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        self._stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        self.sock.settimeout(0.1)
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.hits += 1
            conn.sendall(
                b"HTTP/1.1 500 Oops\r\nContent-Type: application/json\r\nContent-Length: 52\r\n\r\n"
                b'{"error": {"message": "db_password=hunter2-secret"}}'
            )
            conn.close()

    def close(self):
        self._stop = True
        self.thread.join(timeout=2)
        self.sock.close()


@pytest.fixture
def listener():
    server = Listener()
    yield server
    server.close()
    assert server.hits == 0, "the loopback listener was reached"


@pytest.fixture
def listener6():
    try:
        server = Listener("::1")
    except OSError:
        pytest.skip("no IPv6 loopback here")
    yield server
    server.close()
    assert server.hits == 0, "the IPv6 loopback listener was reached"


@pytest.fixture(autouse=True)
def _fresh_clients(settings):
    settings.OUTBOUND_ALLOWED_HOSTS = []
    clear_client_cache()
    yield
    clear_client_cache()


def forms_of(port: int) -> list[str]:
    return [
        f"http://127.0.0.1:{port}/v1",
        f"http://2130706433:{port}/v1",
        f"http://0x7f000001:{port}/v1",
        f"http://0177.0.0.1:{port}/v1",
        f"http://127.1:{port}/v1",
        f"http://localhost:{port}/v1",
        f"http://[::ffff:127.0.0.1]:{port}/v1",
        f"http://[::1]:{port}/v1",
        f"http://LocalHost:{port}/v1",
    ]


# --- check_url ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url,why",
    [
        ("http://127.0.0.1/v1", "loopback"),
        ("http://2130706433/v1", "loopback"),
        ("http://0x7f000001/v1", "loopback"),
        ("http://[::1]/v1", "loopback"),
        ("http://[::ffff:7f00:1]/v1", "loopback"),
        ("http://10.1.2.3/v1", "private"),
        ("http://192.168.0.10/v1", "private"),
        ("http://172.16.5.4/v1", "private"),
        ("http://[fd12::1]/v1", "private"),
        ("http://169.254.169.254/latest/meta-data/", "metadata"),
        ("http://[fe80::1]/v1", "link-local"),
        ("http://169.254.10.10/v1", "link-local"),
        ("http://224.0.0.1/v1", "multicast"),
        ("http://0.0.0.0/v1", "unspecified"),
        ("http://[::]/v1", "unspecified"),
        ("http://100.64.0.1/v1", "carrier-grade NAT"),
        ("http://metadata.google.internal/computeMetadata/v1/", "metadata"),
        ("ftp://8.8.8.8/", "http or https"),
        ("http:///v1", "no host"),
        ("http://user:pw@8.8.8.8/v1", "user name or password"),
        ("javascript:alert(1)", "http or https"),
    ],
)
def test_check_url_refuses_with_the_reason(url, why):
    with pytest.raises(outbound.OutboundRefused) as exc:
        outbound.check_url(url, allowed=())
    assert why in str(exc.value)


@pytest.mark.parametrize("url", ["https://api.openai.com/v1", "http://8.8.8.8/v1", "https://[2606:4700::1111]/"])
def test_check_url_lets_public_addresses_through(url):
    outbound.check_url(url, allowed=(), resolve_names=False)


@pytest.mark.parametrize(
    "allowed,url",
    [
        (["127.0.0.1"], "http://127.0.0.1:8080/v1"),
        (["10.0.0.0/8"], "http://10.20.30.40/v1"),
        (["gateway.internal"], "http://gateway.internal/v1"),
        (["LOCALHOST"], "http://localhost:9/v1"),
        (["::1/128"], "http://[::1]:9/v1"),
    ],
)
def test_the_operator_allows_hosts_and_networks(allowed, url):
    outbound.check_url(url, allowed=allowed)


def test_the_old_setting_name_still_allows(settings):
    settings.JUDGE_BASE_URL_ALLOWED_HOSTS = ["127.0.0.1"]
    outbound.check_url("http://127.0.0.1:9/v1")


def test_both_environment_names_reach_the_settings():
    # The settings module itself, as a deployment loads it: the old name in the environment is
    # read beside the new one (a second assignment once dropped it silently).
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE",)}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DEBUG": "1",
            "OUTBOUND_ALLOWED_HOSTS": "gateway.internal",
            "JUDGE_BASE_URL_ALLOWED_HOSTS": "10.20.0.0/16, 127.0.0.1",
        }
    )
    code = "import django; django.setup(); from django.conf import settings; print(settings.OUTBOUND_ALLOWED_HOSTS)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "['gateway.internal', '10.20.0.0/16', '127.0.0.1']"


# --- at save time: the secrets API ----------------------------------------------------------


@pytest.mark.django_db
def test_saving_a_base_url_in_any_loopback_form_is_a_400_naming_the_field(api, acme, listener, listener6):
    for url in forms_of(listener.port) + [f"http://[::1]:{listener6.port}/v1"]:
        response = api.put("/api/v1/secrets/OPENAI_BASE_URL/", {"value": url}, format="json")
        assert response.status_code == 400, url
        assert response.json()["value"][0].startswith("OPENAI_BASE_URL: "), response.json()
        assert "loopback" in response.json()["value"][0]
    with scopes_disabled():
        assert not TenantSecret.objects.filter(tenant=acme).exists()


@pytest.mark.django_db
def test_saving_a_metadata_base_url_is_refused_on_the_dashboard_too(client, alice, acme):
    client.force_login(alice)
    response = client.post("/settings/secrets/", {"name": "GROQ_BASE_URL", "value": "http://169.254.169.254/"})
    assert response.status_code == 400 and "cloud metadata address" in response.text
    with scopes_disabled():
        assert not TenantSecret.objects.filter(tenant=acme).exists()


@pytest.mark.django_db
def test_an_allowed_gateway_and_a_public_url_are_saved(api, settings):
    settings.OUTBOUND_ALLOWED_HOSTS = ["10.0.0.0/8"]
    assert (
        api.put("/api/v1/secrets/OPENAI_BASE_URL/", {"value": "http://10.1.1.1/v1"}, format="json").status_code == 201
    )
    assert api.put("/api/v1/secrets/ANTHROPIC_BASE_URL/", {"value": "http://8.8.8.8"}, format="json").status_code == 201


# --- at connect time: the SDKs' own HTTP clients ----------------------------------------------

MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5", "groq": "llama-3.1-8b-instant"}


def base_for(provider: str, url_v1: str) -> str:
    return url_v1 if provider == "openai" else url_v1[: -len("/v1")]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "groq"])
def test_every_sdk_refuses_loopback_in_every_form_at_connect_time(provider, listener, listener6):
    # As if the URL had passed the save-time check (a name that rebinds to 127.0.0.1 later).
    for url in forms_of(listener.port) + [f"http://[::1]:{listener6.port}/v1"]:
        result = judge(
            model=MODELS[provider],
            output="x",
            citations=[],
            sources=["y"],
            api_key="sk-test-1234567890",
            base_url=base_for(provider, url),
            timeout=5,
            max_retries=0,
        )
        assert result.status == "error", (url, result)
        # httpx itself rejects some forms (0177.0.0.1) as invalid URLs before connecting; either way no call.
        assert "OutboundRefused" in result.error or "InvalidURL" in result.error, (url, result.error)


class _Redirector(BaseHTTPRequestHandler):
    target = ""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(307)
        self.send_header("Location", self.target)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def redirector(listener):
    handler = type("Handler", (_Redirector,), {"target": f"http://127.0.0.1:{listener.port}/v1/chat/completions"})
    server = ThreadingHTTPServer(("127.0.0.2", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("provider", ["openai", "anthropic", "groq"])
def test_an_allowed_host_cannot_redirect_to_a_refused_one(provider, redirector, settings):
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.2"]
    url = f"http://127.0.0.2:{redirector.server_address[1]}/v1"
    result = judge(
        model=MODELS[provider],
        output="x",
        citations=[],
        sources=["y"],
        api_key="sk-test-1234567890",
        base_url=base_for(provider, url),
        timeout=5,
        max_retries=0,
    )
    assert result.status == "error" and "HTTP 307" in result.error, result
    # the listener fixture asserts it was never reached


def test_the_guarded_client_never_follows_redirects_even_when_asked(redirector, settings):
    client = outbound.guarded_client(timeout=5, allowed=["127.0.0.2", "127.0.0.1"])
    response = client.post(f"http://127.0.0.2:{redirector.server_address[1]}/x", content=b"{}", follow_redirects=True)
    assert response.status_code == 307


# --- what reaches the tenant: the status and a fixed message, never the upstream's body ----------


class _Leaky(BaseHTTPRequestHandler):
    mode = "error"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.mode == "error":
            body = json.dumps({"error": {"type": "server_error", "message": "db_password=hunter2-secret"}})
            self.send_response(500)
        else:
            body = json.dumps(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "gpt-4o-mini",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": "SCORE: 0.9 db_password=hunter2-secret"},
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            )
            self.send_response(200)
        data = body.encode()
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["error", "answer"])
def test_an_upstream_body_never_reaches_the_tenant(api, acme, make_policy, settings, mode):
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (_Leaky,), {"mode": mode}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with scope(tenant=acme):
            tenant_services.secret_set(tenant=acme, name="OPENAI_API_KEY", value="sk-test-abcdef123456", actor=SYSTEM)
            tenant_services.secret_set(
                tenant=acme,
                name="OPENAI_BASE_URL",
                value=f"http://127.0.0.1:{server.server_address[1]}/v1",
                actor=SYSTEM,
            )
        make_policy(
            rules={
                "min_grounding_score": 0.5,
                "action_on_violation": "block",
                "llm_grounding_check": True,
                "llm_grounding_model": "gpt-4o-mini",
                "llm_grounding_threshold": 0.7,
                "llm_grounding_phase": "mid_execution",
            }
        )
        run_id = api.post("/api/v1/runs/", {"agent_name": "a"}, format="json").json()["id"]
        response = api.post(
            f"/api/v1/runs/{run_id}/grounding/",
            {
                "grounding_scores": [0.9],
                "citations": ["s1"],
                "output": "The sky is blue.",
                "sources": [{"id": "s1", "text": "The sky is blue."}],
            },
            format="json",
        )
        assert response.status_code == 200
        assert "hunter2" not in response.content.decode()
        detail = api.get(f"/api/v1/runs/{run_id}/?expand=all").content.decode()
        assert "hunter2" not in detail
        with scopes_disabled():
            judged = Evaluation.objects.get(run_id=run_id, source="llm_judge")
        assert "hunter2" not in json.dumps(judged.metadata) and "hunter2" not in judged.reason
        meta = judged.metadata["judge"]
        if mode == "error":
            assert meta["status"] == "error" and meta["http_status"] == 500
            assert meta["error"] == "The provider call failed"
        else:
            assert meta["status"] == "ok" and meta["raw_text"] == "" and meta["score"] == 0.9
    finally:
        server.shutdown()
        server.server_close()
