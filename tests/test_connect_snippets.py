"""The snippets the dashboard offers to copy (config/templates/connect/) run, as the page shows them,
against a live server: a real gunicorn on loopback with an empty workspace. An admin signs in, presses
the empty overview's "Create an API key" (or the keys page's form), copies each snippet from the page
and runs it in its own process, as a user would; the runs it makes are then read back over the API.
"""

from __future__ import annotations

import html as html_lib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.server_process import ServerProcess

# One server for the module: under `make test` (pytest-xdist, --dist loadgroup) these run on one worker.
pytestmark = pytest.mark.xdist_group("connect-snippets")

ROOT = Path(__file__).resolve().parents[1]
ADMIN = ("ada@example.com", "correct horse battery staple")
# A program traced with OpenTelemetry and configured by nothing but the standard OTEL_* variables,
# as an agent already traced would be: the snippet's exports are all that point it here.
TRACED_AGENT = """
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

provider = TracerProvider(resource=Resource.create())
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
with provider.get_tracer("agent").start_as_current_span("chat gpt-4o-mini") as span:
    span.set_attribute("gen_ai.operation.name", "chat")
    span.set_attribute("gen_ai.request.model", "gpt-4o-mini")
provider.shutdown()
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ServerProcess(tmp_path_factory.mktemp("connect"), admin=ADMIN) as server:
        yield server


@pytest.fixture(scope="module")
def dashboard(server):
    with httpx.Client(base_url=server.url) as client:
        client.get("/accounts/login/")
        signed = client.post(
            "/accounts/login/",
            data={"username": ADMIN[0], "password": ADMIN[1], "csrfmiddlewaretoken": client.cookies["csrftoken"]},
        )
        assert signed.status_code == 302, signed.text
        yield client


@pytest.fixture(scope="module")
def reader(server):
    return {"Authorization": f"Bearer {server.api_key('read')}"}


def snippets(page: str) -> dict[str, str]:
    found = re.findall(r'<code id="snippet-[\w-]+" data-snippet="([\w-]+)">(.*?)</code>', page, re.S)
    return {name: html_lib.unescape(code) for name, code in found}


def post_form(client: httpx.Client, action: str, fields: dict[str, str]) -> str:
    response = client.post(action, data={**fields, "csrfmiddlewaretoken": client.cookies["csrftoken"]})
    assert response.status_code == 200, response.text
    return response.text


def sh(script: str) -> str:
    """Runs a snippet as a user's shell would, the SDK of this checkout on the path as `pip install
    ./client` would put it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GROUNDRULE_", "OTEL_"))}
    env["PYTHONPATH"] = str(ROOT / "client")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{script}\n---\n{done.stdout}\n{done.stderr}"
    return done.stdout


def python(code: str) -> str:
    return f"python - <<'PY'\n{code}\nPY\n"


def setup_without_install(setup: str) -> str:
    """The SDK's setup lines less the install, which needs the checkout on the user's side; it is the
    one docs/sdk.md gives."""
    install, rest = setup.split("\n", 1)
    assert install == "pip install ./client" and "pip install ./client" in (ROOT / "docs" / "sdk.md").read_text()
    return rest


def runs_of(server, reader, agent: str) -> list[dict]:
    return httpx.get(f"{server.url}/api/v1/runs/", params={"agent": agent}, headers=reader).json()["results"]


def test_the_empty_overviews_key_and_snippets_connect_an_agent_by_sdk_and_by_otlp(server, dashboard, reader):
    overview = dashboard.get("/").text
    assert "Connect your first agent" in overview
    form = re.search(r'<form method="post" action="([^"]+)" class="connect-key">(.*?)</form>', overview, re.S)
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', form.group(2)))
    fields.pop("csrfmiddlewaretoken")
    found = snippets(post_form(dashboard, form.group(1), fields))
    assert f"export GROUNDRULE_URL={server.url}\n" in found["sdk-setup"]

    sh(setup_without_install(found["sdk-setup"]) + "\n" + python(found["sdk-run"]))
    (run,) = runs_of(server, reader, "my-agent")
    assert (run["status"], run["final_action"]) == ("completed", "allow")

    sh(found["otlp"] + "\n" + python(TRACED_AGENT))
    newest = max(runs_of(server, reader, "my-agent"), key=lambda r: r["id"])
    assert newest["id"] != run["id"]
    spans = httpx.get(f"{server.url}/api/v1/runs/{newest['id']}/spans/", headers=reader).json()["results"]
    assert [(s["kind"], s["name"]) for s in spans] == [("llm", "chat gpt-4o-mini")]

    # With a run in the workspace the overview shows charts, and no longer the onboarding.
    overview = dashboard.get("/").text
    assert "Connect your first agent" not in overview and 'id="overview-runs-chart"' in overview


def test_a_pinned_agent_keys_snippets_act_for_an_agent_the_key_allows(server, dashboard, reader):
    found = snippets(post_form(dashboard, "/settings/api-keys/", {"name": "support", "agents": "support-*"}))
    sh(setup_without_install(found["sdk-setup"]) + "\n" + python(found["sdk-run"]))
    sh(found["otlp"] + "\n" + python(TRACED_AGENT))
    assert len(runs_of(server, reader, "support-agent")) == 2


@pytest.mark.parametrize("scope", ["read", "admin"])
def test_a_read_or_admin_keys_api_call_answers(server, dashboard, scope):
    found = snippets(post_form(dashboard, "/settings/api-keys/", {"name": f"{scope} key", "scope": scope}))
    printed = sh(found["api"])
    assert "results" in json.loads(printed), printed
