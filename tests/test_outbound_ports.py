"""The outbound allow-lists take ports: `127.0.0.1:11434` lets a tenant's provider URL reach a local
model server and not the Redis broker on another port of the same host. Real listeners on two
loopback ports: the allowed one is connected to, the other is refused before any connection."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_outbound import MODELS, Listener, base_for

from core import allowlist, outbound
from judges.llm import clear_client_cache, judge

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def two_ports():
    allowed, other = Listener(), Listener()
    yield allowed, other
    allowed.close()
    other.close()


@pytest.fixture(autouse=True)
def _fresh_clients(settings):
    settings.OUTBOUND_ALLOWED_HOSTS = []
    settings.WEBHOOK_ALLOWED_HOSTS = []
    clear_client_cache()
    yield
    clear_client_cache()


@pytest.mark.parametrize(
    "entry,target,port",
    [
        ("gateway.internal", "gateway.internal", None),
        ("Gateway.Internal:8443", "gateway.internal", 8443),
        ("127.0.0.1", "127.0.0.1/32", None),
        ("127.0.0.1:11434", "127.0.0.1/32", 11434),
        ("10.0.0.0/8", "10.0.0.0/8", None),
        ("10.0.0.0/8:443", "10.0.0.0/8", 443),
        ("::1", "::1/128", None),
        ("[::1]", "::1/128", None),
        ("[::1]:8080", "::1/128", 8080),
        ("fd00::/8", "fd00::/8", None),
        ("[fd00::/8]:443", "fd00::/8", 443),
    ],
)
def test_every_form_of_entry_parses(entry, target, port):
    parsed, parsed_port = allowlist.parse_entry(entry)
    assert (str(parsed), parsed_port) == (target, port)


@pytest.mark.parametrize(
    "entry,message",
    [
        ("127.0.0.1:", "'127.0.0.1:': the port must be a number from 1 to 65535."),
        ("127.0.0.1:99999", "'127.0.0.1:99999': the port must be a number from 1 to 65535."),
        ("[::1]:0", "'[::1]:0': the port must be a number from 1 to 65535."),
        (
            "*.example.com",
            "'*.example.com' is not a host name, an IP address or a network (CIDR), with an optional :port.",
        ),
        (
            "http://gateway",
            "'http://gateway' is not a host name, an IP address or a network (CIDR), with an optional :port.",
        ),
        (
            "10.0.0.0/33:443",
            "'10.0.0.0/33:443' is not a host name, an IP address or a network (CIDR), with an optional :port.",
        ),
        ("300.1.1.1", "'300.1.1.1' is not a host name, an IP address or a network (CIDR), with an optional :port."),
        ("[127.0.0.1]:80", "'[127.0.0.1]:80': brackets hold an IPv6 address or network, e.g. [::1]:8080."),
        ("fd00::/8:443", "'fd00::/8:443': an IPv6 address with a port is written in brackets, e.g. [::1]:8080."),
    ],
)
def test_an_entry_that_does_not_parse_is_named(entry, message):
    with pytest.raises(allowlist.BadEntry) as refused:
        allowlist.parse_entry(entry)
    assert str(refused.value) == message


@pytest.mark.parametrize("setting", ["OUTBOUND_ALLOWED_HOSTS", "JUDGE_BASE_URL_ALLOWED_HOSTS", "WEBHOOK_ALLOWED_HOSTS"])
def test_a_bad_entry_stops_the_server_at_start_naming_it(setting):
    env = {k: v for k, v in os.environ.items() if not k.endswith("ALLOWED_HOSTS")}
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "1", setting: "127.0.0.1:11434, 127.0.0.1:"})
    code = "import django; django.setup()"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert f"ImproperlyConfigured: {setting}: '127.0.0.1:': the port must be a number from 1 to 65535." in done.stderr


def test_the_allowed_port_connects_and_the_other_is_refused_before_connecting(two_ports):
    allowed, other = two_ports
    client = outbound.guarded_client(timeout=5, allowed=[f"127.0.0.1:{allowed.port}"])
    assert client.get(f"http://127.0.0.1:{allowed.port}/v1").status_code == 500  # the listener's answer
    with pytest.raises(outbound.OutboundRefused) as refused:
        client.get(f"http://127.0.0.1:{other.port}/v1")
    assert str(refused.value) == (
        f"127.0.0.1 is a loopback address; OUTBOUND_ALLOWED_HOSTS allows it on port {allowed.port} only, "
        f"not on port {other.port}."
    )
    assert (allowed.hits, other.hits) == (1, 0)


@pytest.mark.parametrize("entry", ["127.0.0.0/8:{port}", "localhost:{port}"])
def test_a_network_or_a_name_with_a_port_allows_that_port_only(two_ports, entry):
    allowed, other = two_ports
    client = outbound.guarded_client(timeout=5, allowed=[entry.format(port=allowed.port)])
    host = "localhost" if entry.startswith("localhost") else "127.0.0.1"
    assert client.get(f"http://{host}:{allowed.port}/").status_code == 500
    with pytest.raises(outbound.OutboundRefused):
        client.get(f"http://{host}:{other.port}/")
    assert other.hits == 0


def test_a_bare_entry_still_allows_every_port(two_ports):
    allowed, other = two_ports
    client = outbound.guarded_client(timeout=5, allowed=["127.0.0.1"])
    for listener in two_ports:
        assert client.get(f"http://127.0.0.1:{listener.port}/").status_code == 500
    assert (allowed.hits, other.hits) == (1, 1)


def test_ipv6_in_brackets_with_a_port():
    try:
        allowed, other = Listener("::1"), Listener("::1")
    except OSError:
        pytest.skip("no IPv6 loopback here")
    try:
        client = outbound.guarded_client(timeout=5, allowed=[f"[::1]:{allowed.port}"])
        assert client.get(f"http://[::1]:{allowed.port}/").status_code == 500
        with pytest.raises(outbound.OutboundRefused):
            client.get(f"http://[::1]:{other.port}/")
        assert (allowed.hits, other.hits) == (1, 0)
    finally:
        allowed.close()
        other.close()


@pytest.mark.parametrize("provider", ["openai", "anthropic", "groq"])
def test_a_provider_sdk_reaches_the_allowed_port_only(provider, two_ports, settings):
    allowed, other = two_ports
    settings.OUTBOUND_ALLOWED_HOSTS = [f"127.0.0.1:{allowed.port}"]
    for listener in two_ports:
        result = judge(
            model=MODELS[provider],
            output="x",
            citations=[],
            sources=["y"],
            api_key="sk-test-1234567890",
            base_url=base_for(provider, f"http://127.0.0.1:{listener.port}/v1"),
            timeout=5,
            max_retries=0,
        )
        assert result.status == "error"
    assert (allowed.hits, other.hits) == (1, 0)


@pytest.mark.django_db
def test_saving_a_base_url_checks_the_port(api, two_ports, settings):
    allowed, other = two_ports
    settings.OUTBOUND_ALLOWED_HOSTS = [f"127.0.0.1:{allowed.port}"]
    good = api.put("/api/v1/secrets/OPENAI_BASE_URL/", {"value": f"http://127.0.0.1:{allowed.port}/v1"}, format="json")
    assert good.status_code == 201
    bad = api.put("/api/v1/secrets/GROQ_BASE_URL/", {"value": "http://127.0.0.1:6379"}, format="json")
    assert bad.status_code == 400
    assert bad.json()["value"] == [
        f"GROQ_BASE_URL: 127.0.0.1 is a loopback address; OUTBOUND_ALLOWED_HOSTS allows it on port {allowed.port} "
        "only, not on port 6379."
    ]
    # No port in the URL is the scheme's: 80 for http.
    default = api.put("/api/v1/secrets/GROQ_BASE_URL/", {"value": "http://127.0.0.1/openai"}, format="json")
    assert default.status_code == 400 and "not on port 80." in default.json()["value"][0]


@pytest.mark.django_db
def test_a_webhook_may_use_http_on_the_allowed_port_only(api, settings):
    settings.WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1:8765"]
    good = api.post(
        "/api/v1/webhooks/", {"url": "http://127.0.0.1:8765/hook", "events": ["decision.block"]}, format="json"
    )
    assert good.status_code == 201, good.json()
    bad = api.post(
        "/api/v1/webhooks/", {"url": "http://127.0.0.1:6379/hook", "events": ["decision.block"]}, format="json"
    )
    assert bad.status_code == 400
    assert bad.json() == {"url": ["Must be an https:// URL (http:// only for hosts in WEBHOOK_ALLOWED_HOSTS)."]}
