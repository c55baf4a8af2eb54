"""Governance > Policies pages: what each role sees and may do, forms, htmx fragments, history."""

import json

import pytest
from django.utils.html import escape
from django_scopes import scopes_disabled

from policies.categories import get_category
from policies.models import Policy, PolicyVersion
from policies.templates_catalog import TEMPLATES

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
GROUNDING = get_category("grounding")


def form_data(**overrides) -> dict:
    """A valid POST of the generated grounding form, rules at their defaults."""
    data = {
        "category": "grounding",
        "name": "Research grounding",
        "description": "",
        "agents": "research-agent",
        "enabled": "on",
    }
    for spec in GROUNDING.rules:
        key = f"rule_{spec.name}"
        if spec.type == "boolean":
            if spec.default:
                data[key] = "on"
        elif spec.default is not None:
            data[key] = str(spec.default)
        else:
            data[key] = ""
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def policy_count(tenant) -> int:
    with scopes_disabled():
        return Policy.objects.filter(tenant=tenant).count()


def reload(policy) -> Policy:
    with scopes_disabled():
        return Policy.objects.get(pk=policy.pk)


# --- who may see what ----------------------------------------------------------------------------


def test_anonymous_is_sent_to_sign_in(client, acme):
    response = client.get("/policies/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("who", ["alice", "bob", "dave"])
def test_every_member_reads_the_list_detail_and_history(client, request, make_policy, who):
    policy = make_policy(
        name="Strict Research Grounding", rules={"action_on_violation": "block"}, agents=["research-agent"]
    )
    client.force_login(request.getfixturevalue(who))
    listing = client.get("/policies/")
    assert listing.status_code == 200
    assert "Strict Research Grounding" in listing.text
    assert "research-agent" in listing.text
    assert client.get(f"/policies/{policy.pk}/").status_code == 200
    assert client.get(f"/policies/{policy.pk}/history/").status_code == 200


def test_admin_sees_write_controls_and_viewer_does_not(client, alice, dave, make_policy):
    policy = make_policy()
    client.force_login(alice)
    page = client.get("/policies/").text
    assert (
        'href="/policies/new/"' in page
        and f"/policies/{policy.pk}/toggle/" in page
        and f"/policies/{policy.pk}/delete/" in page
    )
    client.force_login(dave)
    page = client.get("/policies/").text
    assert 'href="/policies/new/"' not in page and "/toggle/" not in page and "/delete/" not in page


@pytest.mark.parametrize("who", ["bob", "dave"])
def test_reviewers_and_viewers_are_refused_every_write(client, request, make_policy, who):
    policy = make_policy(rules={"min_citations": 2})
    client.force_login(request.getfixturevalue(who))
    assert client.get("/policies/new/?category=grounding").status_code == 403
    assert client.post("/policies/new/?category=grounding", form_data(name="Sneaky")).status_code == 403
    assert client.get(f"/policies/{policy.pk}/edit/").status_code == 403
    assert client.post(f"/policies/{policy.pk}/edit/", form_data(name="Renamed")).status_code == 403
    assert client.post(f"/policies/{policy.pk}/toggle/", {"enabled": "false"}, **HTMX).status_code == 403
    assert client.post(f"/policies/{policy.pk}/delete/").status_code == 403
    assert client.post("/policies/validate/", form_data(_field="name")).status_code == 403
    after = reload(policy)
    assert (after.name, after.enabled, after.version, after.rules) == (policy.name, True, 1, {"min_citations": 2})
    assert policy_count(policy.tenant) == 1


def test_another_tenants_policy_is_not_found(client, charlie, make_policy):
    policy = make_policy()
    client.force_login(charlie)
    for url in (
        f"/policies/{policy.pk}/",
        f"/policies/{policy.pk}/edit/",
        f"/policies/{policy.pk}/history/",
        f"/policies/{policy.pk}/delete/",
    ):
        assert client.get(url).status_code == 404, url
    assert client.post(f"/policies/{policy.pk}/toggle/", {"enabled": "false"}).status_code == 404
    assert client.post(f"/policies/{policy.pk}/delete/").status_code == 404
    assert client.post(f"/policies/{policy.pk}/edit/", form_data(name="Taken over")).status_code == 404
    assert client.post(f"/policies/validate/?policy={policy.pk}", form_data(_field="name")).status_code == 404
    assert "Strict Research Grounding" not in client.get("/policies/").text
    assert reload(policy).enabled is True


# --- the list ------------------------------------------------------------------------------------


def test_htmx_request_gets_the_results_fragment_and_a_normal_one_the_page(client, alice, make_policy):
    make_policy(name="Medical Q&A")
    client.force_login(alice)
    page = client.get("/policies/")
    fragment = client.get("/policies/", **HTMX)
    assert "<html" in page.text and 'id="policy-results"' in page.text
    assert "<html" not in fragment.text and fragment.text.lstrip().startswith('<section id="policy-results"')
    assert "Medical Q&amp;A" in fragment.text
    assert "HX-Request" in page["Vary"] and "HX-Request" in fragment["Vary"]


def test_search_and_filters(client, alice, make_policy):
    make_policy(name="Strict Research Grounding", rules={"action_on_violation": "block"}, agents=["research-*"])
    make_policy(name="Lenient RAG Agent", rules={"min_grounding_score": 0.6}, agents=["rag-bot"], enabled=False)
    make_policy(name="Medical Q&A", rules={"action_on_violation": "warn"})
    client.force_login(alice)

    def names(query: str) -> set[str]:
        text = client.get(f"/policies/?{query}", **HTMX).text
        return {n for n in ("Strict Research Grounding", "Lenient RAG Agent", "Medical Q&amp;A") if n in text}

    assert names("q=lenient") == {"Lenient RAG Agent"}
    assert names("q=research-") == {"Strict Research Grounding"}  # matches the scope too
    assert names("enabled=false") == {"Lenient RAG Agent"}
    assert names("enabled=true") == {"Strict Research Grounding", "Medical Q&amp;A"}
    # warn is grounding's default: a policy that never set the action is a warn policy
    assert names("action=warn") == {"Lenient RAG Agent", "Medical Q&amp;A"}
    assert names("action=block") == {"Strict Research Grounding"}
    assert names("category=grounding&action=block&q=strict") == {"Strict Research Grounding"}
    assert names("enabled=bogus") == {"Strict Research Grounding", "Lenient RAG Agent", "Medical Q&amp;A"}
    empty = client.get("/policies/?q=nothing-like-this", **HTMX).text
    assert "No policies match these filters" in empty


def test_filters_work_without_javascript(client, alice, make_policy):
    make_policy(name="Alpha")
    make_policy(name="Beta", enabled=False)
    client.force_login(alice)
    page = client.get("/policies/?enabled=false")
    assert "<html" in page.text and "Beta" in page.text and ">Alpha<" not in page.text
    assert 'value="false" selected' in page.text


def test_empty_state(client, alice):
    client.force_login(alice)
    page = client.get("/policies/").text
    assert "No policies yet" in page and "Create the first policy" in page


def test_list_shows_version_and_last_change(client, alice, make_policy):
    policy = make_policy(name="Alpha")
    client.force_login(alice)
    client.post(f"/policies/{policy.pk}/toggle/", {"enabled": "false"})
    page = client.get("/policies/").text
    assert "v2" in page and "disabled by alice" in page


@pytest.mark.parametrize("count", [3, 30])
def test_list_query_count_does_not_grow_with_policies(client, alice, make_policy, django_assert_max_num_queries, count):
    for i in range(count):
        make_policy(name=f"Policy {i:02d}", agents=[f"agent-{i}"], rules={"min_citations": i % 4})
    client.force_login(alice)
    # session, user, memberships, the page count and the page of policies (with their last change)
    with django_assert_max_num_queries(5):
        response = client.get("/policies/?q=policy&action=warn")
    assert response.text.count('id="policy-row-') == count


# --- toggle and delete ---------------------------------------------------------------------------


def test_admin_toggles_a_policy_in_place(client, alice, make_policy):
    policy = make_policy(name="Alpha")
    client.force_login(alice)
    response = client.post(f"/policies/{policy.pk}/toggle/", {"enabled": "false"}, **HTMX)
    assert response.status_code == 200
    assert "<html" not in response.text and response.text.lstrip().startswith(f'<tr id="policy-row-{policy.pk}"')
    assert 'aria-checked="false"' in response.text
    assert json.loads(response["HX-Trigger"])["toast"]["message"] == "“Alpha” disabled."
    after = reload(policy)
    assert after.enabled is False and after.version == 2
    with scopes_disabled():
        assert PolicyVersion.objects.filter(policy_ref=policy.pk).order_by("-id").first().change == "disabled"
    # again with the same wish: nothing changes (the button sends the state it wants)
    client.post(f"/policies/{policy.pk}/toggle/", {"enabled": "false"}, **HTMX)
    assert reload(policy).version == 2
    # without JavaScript: a redirect back to where the form was
    response = client.post(f"/policies/{policy.pk}/toggle/", {"enabled": "true", "next": "/policies/?q=al"})
    assert response.status_code == 302 and response["Location"] == "/policies/?q=al"
    assert reload(policy).enabled is True


def test_toggling_a_policy_whose_stored_rules_went_stale_says_what_to_do(client, alice, make_policy):
    policy = make_policy(name="Old")
    with scopes_disabled():
        Policy.objects.filter(pk=policy.pk).update(rules={"retired_rule": 1})
    client.force_login(alice)
    response = client.post(f"/policies/{policy.pk}/toggle/", {"enabled": "false"}, **HTMX)
    assert response.status_code == 200 and response["HX-Reswap"] == "none"
    assert "no longer valid" in json.loads(response["HX-Trigger"])["toast"]["message"]
    response = client.post(f"/policies/{policy.pk}/toggle/", {"enabled": "false"})
    assert response["Location"] == f"/policies/{policy.pk}/edit/"
    assert reload(policy).enabled is True
    # the edit form drops the rule the schema no longer has
    client.post(f"/policies/{policy.pk}/edit/", form_data(name="Old", agents=""))
    assert reload(policy).rules == {}


def test_toggle_refuses_an_offsite_next(client, alice, make_policy):
    policy = make_policy()
    client.force_login(alice)
    response = client.post(f"/policies/{policy.pk}/toggle/", {"enabled": "false", "next": "https://evil.example/"})
    assert response["Location"] == f"/policies/{policy.pk}/"


def test_toggle_needs_post(client, alice, make_policy):
    policy = make_policy()
    client.force_login(alice)
    assert client.get(f"/policies/{policy.pk}/toggle/").status_code == 405


def test_delete_asks_for_confirmation_then_deletes(client, alice, make_policy):
    policy = make_policy(name="Doomed")
    client.force_login(alice)
    confirm = client.get(f"/policies/{policy.pk}/delete/")
    assert confirm.status_code == 200 and "Delete “Doomed”?" in confirm.text
    assert policy_count(policy.tenant) == 1
    response = client.post(f"/policies/{policy.pk}/delete/")
    assert response.status_code == 302 and response["Location"] == "/policies/"
    assert policy_count(policy.tenant) == 0
    assert "Policy “Doomed” deleted." in client.get("/policies/").text


def test_delete_from_the_list_removes_the_row(client, alice, make_policy):
    policy = make_policy(name="Doomed")
    client.force_login(alice)
    response = client.post(f"/policies/{policy.pk}/delete/", **HTMX)
    assert response.status_code == 200 and response.text == ""
    assert "deleted" in json.loads(response["HX-Trigger"])["toast"]["message"]
    assert response["HX-Trigger-After-Swap"] == "policyDeleted"  # the results reload themselves
    assert policy_count(policy.tenant) == 0
    with scopes_disabled():
        assert PolicyVersion.objects.filter(policy_ref=policy.pk, change="deleted").exists()


# --- new policy ----------------------------------------------------------------------------------


def test_new_policy_starts_by_choosing_a_category_and_offers_the_templates(client, alice):
    client.force_login(alice)
    page = client.get("/policies/new/").text
    assert "Grounding" in page and "?category=grounding" in page
    for template in TEMPLATES:
        assert template.name.replace("&", "&amp;") in page
        assert f"template={template.slug}" in page


def test_the_form_is_generated_from_the_rule_schema(client, alice):
    client.force_login(alice)
    response = client.get("/policies/new/?category=grounding")
    assert response.status_code == 200
    page = response.text
    for spec in GROUNDING.rules:
        assert f'name="rule_{spec.name}"' in page, spec.name
        assert spec.label in page
        assert escape(spec.help.split(".")[0]) in page
    assert '<input type="checkbox" name="rule_require_source_grounding"' in page
    assert (
        'type="number" name="rule_min_grounding_score" value="0.7" step="0.01" inputmode="decimal" min="0.0" max="1.0"'
        in page
    )
    assert 'type="number" name="rule_min_citations" value="1" step="1" inputmode="numeric" min="0"' in page
    assert '<select name="rule_action_on_violation"' in page and '<option value="block">block</option>' in page
    assert '<textarea name="rule_abstention_response"' in page
    assert "Default: empty." in page and "Default: warn." in page
    # every text field validates live against the validate endpoint
    assert 'hx-post="/policies/validate/"' in page and '"_field": "rule_min_grounding_score"' in page
    assert 'name="agents"' in page and 'name="enabled"' in page


def test_unknown_category_is_not_found(client, alice):
    client.force_login(alice)
    assert client.get("/policies/new/?category=nope").status_code == 404


def test_a_template_prefills_the_form(client, alice):
    client.force_login(alice)
    page = client.get("/policies/new/?category=grounding&template=strict-research-assistant").text
    assert 'name="name" value="Strict Research Assistant"' in page
    assert 'name="rule_min_grounding_score" value="0.8"' in page
    assert 'name="rule_min_citations" value="2"' in page
    assert 'name="rule_max_unsupported_claims" value="0"' in page
    assert '<option value="block" selected>block</option>' in page
    assert 'id="id_rule_require_source_grounding" checked' in page
    assert "I don&#x27;t have sufficient grounded evidence" in page
    assert "Pre-filled from the template" in page


def test_choosing_a_template_with_htmx_swaps_only_the_form(client, alice):
    client.force_login(alice)
    response = client.get("/policies/new/?category=grounding&template=rag-pipeline", **HTMX)
    assert "<html" not in response.text and response.text.lstrip().startswith('<div id="policy-editor"')
    assert 'aria-current="true"' in response.text  # the sidebar marks the chosen template
    assert 'name="rule_score_relevance_floor" value="0.5"' in response.text


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: t.slug)
def test_every_template_creates_its_policy(client, alice, acme, template):
    assert GROUNDING.clean_rules(template.rules)  # valid for its category
    client.force_login(alice)
    page = client.get(f"/policies/new/?category=grounding&template={template.slug}")
    data = {k: v for k, v in page.context["form"].initial.items()}
    post = {"category": "grounding", "agents": "research-agent"}
    for key, value in data.items():
        if isinstance(value, bool):
            if value:
                post[key] = "on"
        elif key != "agents":
            post[key] = "" if value is None else str(value)
    response = client.post("/policies/new/?category=grounding", post)
    assert response.status_code == 302, response.context["form"].errors if response.context else response
    with scopes_disabled():
        policy = Policy.objects.get(tenant=acme, name=template.name)
    effective = policy.effective_rules
    for key, value in template.rules.items():
        assert effective[key] == value, key


def test_admin_creates_a_policy(client, alice, acme):
    client.force_login(alice)
    response = client.post(
        "/policies/new/?category=grounding",
        form_data(
            name="  Strict Research Grounding ",
            agents="research-agent, support-*\nresearch-agent\n\n",
            rule_require_source_grounding="on",
            rule_min_grounding_score="0.8",
            rule_min_citations="2",
            rule_max_unsupported_claims="0",
            rule_action_on_violation="block",
            description="For the research team.",
        ),
    )
    assert response.status_code == 302
    with scopes_disabled():
        policy = Policy.objects.get(tenant=acme)
    assert response["Location"] == f"/policies/{policy.pk}/"
    assert policy.name == "Strict Research Grounding"
    assert policy.scope == {"agents": ["research-agent", "support-*"]}
    assert policy.enabled is True and policy.description == "For the research team."
    # only what differs from the defaults is stored
    assert policy.rules == {
        "require_source_grounding": True,
        "min_grounding_score": 0.8,
        "min_citations": 2,
        "max_unsupported_claims": 0,
        "action_on_violation": "block",
    }
    assert policy.created_by == alice
    detail = client.get(response["Location"]).text
    assert "Policy “Strict Research Grounding” created." in detail


def test_an_emptied_nullable_rule_is_null_and_an_emptied_required_one_is_the_default(client, alice, acme):
    client.force_login(alice)
    client.post("/policies/new/?category=grounding", form_data(rule_min_grounding_score="", rule_min_citations=""))
    with scopes_disabled():
        policy = Policy.objects.get(tenant=acme)
    assert policy.rules == {"min_grounding_score": None}
    assert policy.effective_rules["min_citations"] == 1


def test_bad_input_is_shown_next_to_each_field_and_nothing_is_saved(client, alice, acme, make_policy):
    make_policy(name="Taken")
    client.force_login(alice)
    response = client.post(
        "/policies/new/?category=grounding",
        form_data(
            name="Taken",
            rule_min_grounding_score="1.5",
            rule_min_citations="two",
            rule_score_top_n="0",
            rule_action_on_violation="explode",
            rule_llm_grounding_model="bert-base",
            agents="ok-agent",
        ),
    )
    assert response.status_code == 400
    assert policy_count(acme) == 1
    page = response.text
    assert "Nothing was saved." in page

    def error_of(field: str) -> str:
        start = page.index(f'id="id_{field}_error"')
        return page[start : page.index("</div>", start)]

    assert "A policy with this name already exists." in error_of("name")
    assert "Must be a number between 0.0 and 1.0." in error_of("rule_min_grounding_score")
    assert "Must be a whole number." in error_of("rule_min_citations")
    assert "Must be a whole number between 1 and 1000000." in error_of("rule_score_top_n")
    assert "Must be one of: warn, block." in error_of("rule_action_on_violation")
    assert "Must be a model name starting with" in error_of("rule_llm_grounding_model")
    assert error_of("agents").endswith(">")  # no error there
    # what the admin typed comes back, so it can be corrected
    assert 'name="rule_min_grounding_score" value="1.5"' in page
    assert 'name="rule_min_citations" value="two"' in page


def test_nan_and_infinity_are_refused(client, alice, acme):
    client.force_login(alice)
    for bad in ("nan", "inf", "1e999"):
        response = client.post("/policies/new/?category=grounding", form_data(rule_abstention_threshold=bad))
        assert response.status_code == 400
    assert policy_count(acme) == 0


def test_missing_name_is_required(client, alice, acme):
    client.force_login(alice)
    response = client.post("/policies/new/?category=grounding", form_data(name="   "))
    assert response.status_code == 400 and "This field is required." in response.text
    assert policy_count(acme) == 0


# --- live validation -----------------------------------------------------------------------------


def test_live_validation_returns_that_fields_errors(client, alice):
    client.force_login(alice)
    bad = client.post(
        "/policies/validate/",
        form_data(_field="rule_min_grounding_score", rule_min_grounding_score="1.2", rule_min_citations="x"),
        **HTMX,
    )
    assert bad.status_code == 200
    assert bad.text.strip().startswith('<div class="field-errors" id="id_rule_min_grounding_score_error"')
    assert "Must be a number between 0.0 and 1.0." in bad.text
    assert "whole number" not in bad.text  # only the field asked about
    good = client.post(
        "/policies/validate/", form_data(_field="rule_min_grounding_score", rule_min_grounding_score="0.75"), **HTMX
    )
    assert "<p>" not in good.text and 'id="id_rule_min_grounding_score_error"' in good.text


def test_live_validation_of_name_and_scope(client, alice, make_policy):
    policy = make_policy(name="Taken")
    client.force_login(alice)
    taken = client.post("/policies/validate/", form_data(_field="name", name="Taken"))
    assert "A policy with this name already exists." in taken.text
    # editing that policy: its own name is fine
    own = client.post(f"/policies/validate/?policy={policy.pk}", form_data(_field="name", name="Taken"))
    assert "<p>" not in own.text
    long_agent = client.post("/policies/validate/", form_data(_field="agents", agents="a" * 201))
    assert "Item 1: Must be a non-empty string of at most 200 characters." in long_agent.text


def test_live_validation_rejects_unknown_fields_and_categories(client, alice):
    client.force_login(alice)
    assert client.post("/policies/validate/", form_data(_field="rule_nope")).status_code == 400
    assert client.post("/policies/validate/", form_data(_field="name", category="nope")).status_code == 400
    assert client.get("/policies/validate/").status_code == 405


# --- detail, edit, history -----------------------------------------------------------------------


def test_detail_shows_effective_rules_and_which_are_defaults(client, dave, make_policy):
    policy = make_policy(
        name="Medical Q&A", rules={"min_grounding_score": 0.9, "action_on_violation": "block"}, agents=["medical-*"]
    )
    client.force_login(dave)
    page = client.get(f"/policies/{policy.pk}/").text
    assert "Effective rules" in page and "medical-*" in page

    def row(rule: str) -> str:
        start = page.index(f'<code class="rule-name">{rule}</code>')
        return page[start : page.index("</tr>", start)]

    assert "0.9" in row("min_grounding_score") and "badge-set" in row("min_grounding_score")
    assert 'badge-muted">default' in row("min_citations") and '<code class="value">1</code>' in row("min_citations")
    assert '<code class="value">empty</code>' in row("max_unsupported_claims")
    assert "Edit" not in page.split("Effective rules")[0].split("page-actions")[1]  # viewers get no edit button


def test_edit_prefills_saves_a_new_version_and_keeps_pinned_rules(client, alice, make_policy):
    policy = make_policy(name="Alpha", rules={"min_citations": 1, "action_on_violation": "block"}, agents=["a"])
    client.force_login(alice)
    page = client.get(f"/policies/{policy.pk}/edit/")
    assert page.status_code == 200
    assert 'name="name" value="Alpha"' in page.text and '<option value="block" selected>' in page.text
    assert f'hx-post="/policies/validate/?policy={policy.pk}"' in page.text
    response = client.post(
        f"/policies/{policy.pk}/edit/",
        form_data(
            name="Alpha",
            agents="a",
            rule_min_citations="1",
            rule_min_grounding_score="0.85",
            rule_action_on_violation="block",
        ),
    )
    assert response.status_code == 302
    after = reload(policy)
    assert after.version == 2
    # min_citations was set explicitly before, so it stays pinned even though it equals the default
    assert after.rules == {"min_grounding_score": 0.85, "min_citations": 1, "action_on_violation": "block"}
    assert "Saved “Alpha” as version 2." in client.get(response["Location"]).text


def test_edit_without_changes_keeps_the_version(client, alice, make_policy):
    policy = make_policy(name="Alpha", agents=["a"])
    client.force_login(alice)
    response = client.post(f"/policies/{policy.pk}/edit/", form_data(name="Alpha", agents="a"))
    assert response.status_code == 302 and reload(policy).version == 1
    assert "Nothing changed." in client.get(response["Location"]).text


def test_edit_with_errors_saves_nothing(client, alice, make_policy):
    policy = make_policy(name="Alpha", agents=["a"])
    client.force_login(alice)
    response = client.post(f"/policies/{policy.pk}/edit/", form_data(name="", agents="a", rule_min_citations="-1"))
    assert response.status_code == 400
    assert (
        "Must be a whole number between 0 and 1000000." in response.text and "This field is required." in response.text
    )
    after = reload(policy)
    assert (after.name, after.version, after.rules) == ("Alpha", 1, {})


def test_history_lists_every_version_with_a_diff(client, bob, alice, make_policy):
    policy = make_policy(name="Alpha", rules={"min_grounding_score": 0.8}, agents=["research-agent"])
    client.force_login(alice)
    client.post(
        f"/policies/{policy.pk}/edit/",
        form_data(
            name="Alpha v2", agents="research-agent\nsupport-*", rule_min_grounding_score="0.9", rule_min_citations="3"
        ),
    )
    client.post(f"/policies/{policy.pk}/toggle/", {"enabled": "false"})
    client.force_login(bob)
    response = client.get(f"/policies/{policy.pk}/history/")
    assert response.status_code == 200
    page = response.text
    assert page.index(">v3<") < page.index(">v2<") < page.index(">v1<")  # newest first

    def version(n: int) -> str:
        start = page.index(f'id="v{n}-title"')
        end = page.find('class="timeline-item"', start)
        return page[start : end if end > 0 else None]

    v3, v2, v1 = version(3), version(2), version(1)
    assert "disabled" in v3 and "by <strong>alice</strong>" in v3
    assert '<del class="diff-old">true</del>' in v3 and '<ins class="diff-new">false</ins>' in v3
    assert "Name" in v2 and '<del class="diff-old">Alpha</del>' in v2 and '<ins class="diff-new">Alpha v2</ins>' in v2
    assert '<del class="diff-old">0.8</del>' in v2 and '<ins class="diff-new">0.9</ins>' in v2
    assert "Minimum citations" in v2 and '<del class="diff-old">1</del>' in v2 and '<ins class="diff-new">3</ins>' in v2
    assert '<ins class="diff-new">research-agent, support-*</ins>' in v2
    assert "Minimum grounding score" not in v3  # only what changed
    assert "created" in v1 and "by <strong>tests</strong>" in v1 and '<ins class="diff-new">0.8</ins>' in v1


def test_the_list_pages_and_keeps_the_filters(client, alice, make_policy):
    for i in range(53):
        make_policy(name=f"Policy {i:02d}", rules={"action_on_violation": "block"} if i % 2 else {})
    client.force_login(alice)
    first = client.get("/policies/").text
    assert first.count('id="policy-row-') == 50 and "Page 1 of 2" in first
    second = client.get("/policies/?page=2", **HTMX).text
    assert second.count('id="policy-row-') == 3 and "Policy 52" in second
    blocking = client.get("/policies/?action=block").text
    assert blocking.count('id="policy-row-') == 26 and "Page 1 of 2" not in blocking
    assert client.get("/policies/?page=99").status_code == 200  # past the end: the last page
