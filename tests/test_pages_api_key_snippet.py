"""A new API key is shown once with a ready snippet for its scope (config/templates/connect/), and the
empty overview's "Create an API key" button makes one. tests/test_connect_snippets.py runs the snippets."""

import html as html_lib
import logging
import re

import pytest
from django_scopes import scopes_disabled
from pages_support import signed_in

from tenants.models import ApiKey
from tenants.pages.connect import example_agent

pytestmark = pytest.mark.django_db


def snippets(page: str) -> dict[str, str]:
    """The snippets a page offers to copy, by name, as the copy button copies them (the text)."""
    found = re.findall(r'<code id="snippet-[\w-]+" data-snippet="([\w-]+)">(.*?)</code>', page, re.S)
    return {name: html_lib.unescape(code) for name, code in found}


def _onboarding_form(page: str) -> tuple[str, dict[str, str]]:
    form = re.search(r'<form method="post" action="([^"]+)" class="connect-key">(.*?)</form>', page, re.S)
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', form.group(2)))
    fields.pop("csrfmiddlewaretoken", None)
    return form.group(1), fields


def test_the_empty_overviews_button_makes_an_agent_key_shown_once_with_its_snippets(alice, acme):
    client = signed_in(alice)
    action, fields = _onboarding_form(client.get("/").content.decode())
    response = client.post(action, fields)
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    page = response.content.decode()
    raw = re.search(r'id="new-key-value" class="mono" type="text" readonly value="(gr_[\w-]+)"', page).group(1)
    with scopes_disabled():
        key = ApiKey.objects.get(tenant=acme)
    assert (key.name, key.scope, key.agents) == ("First agent", "agent", [])
    assert snippets(page) == {
        "sdk-setup": f"pip install ./client\nexport GROUNDRULE_URL=http://testserver\nexport GROUNDRULE_API_KEY={raw}",
        "sdk-run": 'import groundrule\n\nwith groundrule.Client().run(agent_name="my-agent") as run:\n'
        '    run.record_grounding(grounding_scores=[0.92], citations=["handbook.pdf"])',
        "otlp": "export OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://testserver/v1/traces\n"
        f'export OTEL_EXPORTER_OTLP_TRACES_HEADERS="Authorization=Bearer%20{raw}"\n'
        "export OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf\n"
        "export OTEL_SERVICE_NAME=my-agent",
    }
    assert page.count('data-copy="#snippet-') == 3
    # Reloading the page shows neither the key nor a snippet holding it.
    again = client.get("/settings/api-keys/").content.decode()
    assert raw not in again and not snippets(again) and key.prefix in again


@pytest.mark.parametrize(
    "scope, path",
    [("read", "runs"), ("admin", "policies")],
)
def test_a_read_or_admin_key_comes_with_an_api_call_not_the_agent_snippets(alice, acme, scope, path):
    response = signed_in(alice).post("/settings/api-keys/", {"name": f"{scope} key", "scope": scope})
    page = response.content.decode()
    raw = response.context["raw_key"]
    assert snippets(page) == {
        "api": f'curl -s http://testserver/api/v1/{path}/ \\\n  -H "Authorization: Bearer {raw}"',
    }
    assert "Connect an agent with it" not in page


def test_a_key_pinned_to_agents_gets_a_snippet_for_an_agent_it_may_act_for(alice, acme):
    response = signed_in(alice).post("/settings/api-keys/", {"name": "support", "agents": "support-*, billing-?"})
    found = snippets(response.content.decode())
    assert 'run(agent_name="support-agent")' in found["sdk-run"]
    assert found["otlp"].endswith("export OTEL_SERVICE_NAME=support-agent")


@pytest.mark.parametrize(
    "agents, name",
    [
        ([], "my-agent"),
        (["research-agent", "support-*"], "research-agent"),
        (["support-*"], "support-agent"),
        (["bot-?"], "bot-a"),
        (["[!a]*"], "[!a]*"),  # no simple name fills it in: the pattern matches itself literally
        (['it\'s "quoted"'], 'it\'s "quoted"'),
    ],
)
def test_the_example_agent_is_one_the_key_may_act_for(agents, name):
    assert example_agent(agents) == name


def test_an_agent_name_with_quotes_stays_a_valid_string_in_each_snippet(alice, acme):
    response = signed_in(alice).post("/settings/api-keys/", {"name": "odd", "agents": 'it\'s "quoted"'})
    found = snippets(response.content.decode())
    assert 'run(agent_name="it\'s \\"quoted\\"")' in found["sdk-run"]
    assert found["otlp"].endswith("export OTEL_SERVICE_NAME='it'\"'\"'s \"quoted\"'")


def test_the_new_key_is_never_logged(alice, acme, caplog):
    caplog.set_level(logging.DEBUG)
    response = signed_in(alice).post("/settings/api-keys/", {"name": "quiet"})
    raw = response.context["raw_key"]
    assert raw in response.content.decode()
    assert raw not in caplog.text and raw[10:] not in caplog.text


@pytest.mark.parametrize("who", ["bob", "dave"])
def test_only_an_admin_can_use_the_button(who, request, acme):
    client = signed_in(request.getfixturevalue(who))
    assert client.post("/settings/api-keys/", {"name": "First agent", "scope": "agent"}).status_code == 403
    with scopes_disabled():
        assert not ApiKey.objects.filter(tenant=acme).exists()


def test_the_button_makes_a_key_for_the_signed_in_tenant_only(charlie, globex, acme):
    signed_in(charlie).post("/settings/api-keys/", {"name": "First agent", "scope": "agent"})
    with scopes_disabled():
        assert list(ApiKey.objects.values_list("tenant__slug", flat=True)) == ["globex"]
