"""Every example a user would copy from README.md and docs/ runs, as written, against a live demo server.

A runnable block is marked in the Markdown with `<!-- test: NAME -->` on the line before its fence; the
block printed after it, marked `<!-- output: NAME -->`, is what it must print. The blocks are read
from the files each time, so a doc that drifts from the product fails here. One server (gunicorn on
loopback, `seed_demo` loaded) serves the whole module; each example runs in its own process, as a user
would run it, with `GROUNDRULE_URL` and `GROUNDRULE_API_KEY` set as the docs say, and the SDK of this
checkout first on the path.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.fake_llm_server import FakeLLMServer
from tests.server_process import ServerProcess
from tests.webhook_receiver import WebhookReceiver
from webhooks.services import SUBSCRIPTIONS_TTL_SECONDS

# One demo server for the module: under `make test` (pytest-xdist, --dist loadgroup) every test here
# runs on the same worker, so the server starts once.
pytestmark = pytest.mark.xdist_group("doc-examples")

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKED = re.compile(r"^<!-- (test|output): ([\w-]+) -->\n```(\w*)\n(.*?)^```$", re.M | re.S)
# The model's answer in the OpenAI Agents example (a fake provider on loopback stands in for OpenAI).
AGENT_ANSWER = "The Federal Reserve raised interest rates by 25 basis points in July 2023."
# The Agents SDK talks to OpenAI's Responses API by default; the fake provider speaks Chat Completions.
AGENTS_PRELUDE = "from agents import set_default_openai_api\nset_default_openai_api('chat_completions')\n"


@dataclass(frozen=True)
class Block:
    name: str
    language: str
    code: str
    where: str


def marked_blocks(kind: str) -> dict[str, Block]:
    found: dict[str, Block] = {}
    for path in DOC_FILES:
        text = path.read_text()
        for match in MARKED.finditer(text):
            if match.group(1) != kind:
                continue
            name = match.group(2)
            where = f"{path.relative_to(ROOT)}:{text[: match.start()].count(chr(10)) + 1}"
            assert name not in found, f"{name} is marked twice: {found[name].where} and {where}"
            found[name] = Block(name, match.group(3), match.group(4), where)
    return found


EXAMPLES = marked_blocks("test")
OUTPUTS = marked_blocks("output")


@pytest.fixture(scope="module")
def fake_openai():
    with FakeLLMServer(responder=AGENT_ANSWER) as server:
        yield server


@pytest.fixture(scope="module")
def receiver():
    with WebhookReceiver() as receiver:
        yield receiver


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    with ServerProcess(
        tmp_path_factory.mktemp("docs-demo"), demo_runs=4, extra_env={"WEBHOOK_ALLOWED_HOSTS": "127.0.0.1"}
    ) as server:
        yield server


@pytest.fixture(scope="module")
def user_env(demo, fake_openai):
    """The environment a reader has after Getting started: the server's URL and the demo's agent key."""
    return {
        **demo.env,
        "GROUNDRULE_URL": demo.url,
        "GROUNDRULE_API_KEY": demo.demo_key,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "client"), str(ROOT)]),
        "OPENAI_BASE_URL": fake_openai.openai_base_url,
        "OPENAI_API_KEY": fake_openai.key_for("openai"),
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
    }


@pytest.fixture(scope="module")
def read_key(demo):
    return {"Authorization": f"Bearer {demo.api_key('read')}"}


@pytest.fixture(scope="module")
def admin_key(demo):
    return {"Authorization": f"Bearer {demo.api_key('admin')}"}


def run_example(name: str, env: dict[str, str], *, prelude: str = "") -> str:
    block = EXAMPLES[name]
    if block.language == "python":
        command = [sys.executable, "-c", prelude + block.code]
    else:
        assert block.language == "sh", f"{block.where}: a runnable block is python or sh, not {block.language!r}"
        command = ["bash", "-euo", "pipefail", "-c", block.code]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"{block.where} ({name}) failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def assert_prints_what_the_doc_says(name: str, printed: str) -> None:
    expected = OUTPUTS[name]
    assert printed.strip() == expected.code.strip(), f"{expected.where}: the doc says it prints something else"


def test_every_marked_example_is_run_here_and_every_output_belongs_to_one():
    assert set(EXAMPLES) == {
        "readme-sdk",
        "sdk-quickstart",
        "sdk-block",
        "sdk-nested-spans",
        "http-quickstart",
        "langchain",
        "openai-agents",
        "otlp",
        "webhook-verify",
    }
    assert set(OUTPUTS) <= set(EXAMPLES)


@pytest.mark.parametrize("name", ["readme-sdk", "sdk-block", "sdk-nested-spans", "http-quickstart", "langchain"])
def test_example_prints_what_the_doc_says(name, user_env):
    assert_prints_what_the_doc_says(name, run_example(name, user_env))


def test_sdk_quickstart_prints_its_decisions_and_its_run_is_stored_completed_and_allowed(demo, user_env, read_key):
    assert_prints_what_the_doc_says("sdk-quickstart", run_example("sdk-quickstart", user_env))
    latest = httpx.get(f"{demo.url}/api/v1/runs/", params={"agent": "research-agent"}, headers=read_key).json()
    newest = max(latest["results"], key=lambda run: run["id"])
    assert (newest["status"], newest["final_action"]) == ("completed", "allow")


def test_openai_agents_example_answers_the_abstention_when_the_run_is_blocked_at_exit(user_env, fake_openai):
    printed = run_example("openai-agents", user_env, prelude=AGENTS_PRELUDE)
    assert_prints_what_the_doc_says("openai-agents", printed)
    assert fake_openai.requests_for("openai"), "the agent's model was never called"


def test_otlp_example_lands_its_span_in_a_run(demo, user_env, read_key):
    run_example("otlp", user_env)
    runs = httpx.get(f"{demo.url}/api/v1/runs/", params={"agent": "support-bot"}, headers=read_key).json()["results"]
    newest = max(runs, key=lambda run: run["id"])
    spans = httpx.get(f"{demo.url}/api/v1/runs/{newest['id']}/spans/", headers=read_key).json()["results"]
    (span,) = spans
    assert (span["kind"], span["name"]) == ("llm", "chat gpt-4o-mini")


def test_webhook_verification_example_accepts_a_real_delivery_and_refuses_a_forgery(demo, receiver, admin_key):
    namespace: dict = {}
    exec(EXAMPLES["webhook-verify"].code, namespace)
    verify = namespace["verify"]

    created = httpx.post(
        f"{demo.url}/api/v1/webhooks/", headers=admin_key, json={"url": receiver.url, "events": ["decision.block"]}
    )
    assert created.status_code == 201, created.text
    secret = created.json()["secret"]
    agent = {"Authorization": f"Bearer {demo.demo_key}"}
    # The server's workers each keep the tenant's subscriptions for up to SUBSCRIPTIONS_TTL_SECONDS
    # without a shared cache, so a worker that saw none before the webhook existed may send nothing
    # for a while: block again until a delivery arrives, within that time and a margin.
    deadline = time.monotonic() + SUBSCRIPTIONS_TTL_SECONDS + 15
    while not receiver.received and time.monotonic() < deadline:
        run = httpx.post(f"{demo.url}/api/v1/runs/", headers=agent, json={"agent_name": "research-agent"}).json()
        blocked = httpx.post(
            f"{demo.url}/api/v1/runs/{run['run_id']}/grounding/", headers=agent, json={"grounding_scores": [0.2]}
        ).json()
        assert blocked["decision"]["action"] == "block"
        for _ in range(20):
            if receiver.received:
                break
            time.sleep(0.1)
    delivery = receiver.received[0]
    signature = delivery.headers["X-Groundrule-Signature"]
    assert verify(secret, signature, delivery.body)
    assert not verify(secret, signature, delivery.body.replace(b"block", b"allow"))
    assert not verify("whsec_not-the-secret", signature, delivery.body)
    stale = re.sub(r"t=\d+", f"t={int(time.time()) - 3600}", signature)
    assert not verify(secret, stale, delivery.body)
