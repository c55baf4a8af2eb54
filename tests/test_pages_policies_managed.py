"""The dashboard and policies managed by code: a badge, and a confirmation before an edit that the
next `groundrule policies apply` would overwrite (a checkbox: works without JavaScript)."""

import pytest
from django_scopes import scopes_disabled
from test_pages_policies import form_data

from policies.models import Policy

pytestmark = pytest.mark.django_db
UNCONFIRMED = "Tick the box to save: this policy is managed by code, and the next apply overwrites this edit."


@pytest.fixture
def managed(make_policy):
    policy = make_policy(name="Alpha", agents=["a"])
    with scopes_disabled():
        Policy.objects.filter(pk=policy.pk).update(managed_by_code=True)
    return policy


def reload(policy):
    with scopes_disabled():
        return Policy.objects.get(pk=policy.pk)


def test_detail_and_list_show_managed_by_code(client, dave, managed, make_policy):
    make_policy(name="Beta")
    client.force_login(dave)
    assert ">Managed by code</span>" in client.get(f"/policies/{managed.pk}/").text
    listing = client.get("/policies/").text
    assert listing.count(">Managed by code</span>") == 1


def test_editing_a_managed_policy_asks_for_confirmation_and_saves_nothing_without_it(client, alice, managed):
    client.force_login(alice)
    page = client.get(f"/policies/{managed.pk}/edit/").text
    assert 'name="confirm_managed"' in page and "Save anyway: I know the next apply overwrites this edit" in page
    response = client.post(f"/policies/{managed.pk}/edit/", form_data(name="Alpha", agents="a", rule_min_citations="3"))
    assert response.status_code == 400
    assert UNCONFIRMED in response.text and 'aria-invalid="true"' in response.text
    assert 'name="rule_min_citations" value="3"' in response.text  # what was typed is kept
    assert reload(managed).version == 1


def test_a_confirmed_edit_of_a_managed_policy_is_saved(client, alice, managed):
    client.force_login(alice)
    data = form_data(name="Alpha", agents="a", rule_min_citations="3", confirm_managed="yes")
    response = client.post(f"/policies/{managed.pk}/edit/", data)
    assert response.status_code == 302
    after = reload(managed)
    assert (after.version, after.rules, after.managed_by_code) == (2, {"min_citations": 3}, True)


def test_an_edit_that_changes_nothing_needs_no_confirmation(client, alice, managed):
    client.force_login(alice)
    response = client.post(f"/policies/{managed.pk}/edit/", form_data(name="Alpha", agents="a"))
    assert response.status_code == 302 and reload(managed).version == 1


def test_an_unmanaged_policy_is_edited_without_confirmation(client, alice, make_policy):
    policy = make_policy(name="Alpha", agents=["a"])
    client.force_login(alice)
    assert 'name="confirm_managed"' not in client.get(f"/policies/{policy.pk}/edit/").text
    response = client.post(f"/policies/{policy.pk}/edit/", form_data(name="Alpha", agents="a", rule_min_citations="3"))
    assert response.status_code == 302 and reload(policy).version == 2


def test_another_tenants_managed_policy_is_a_404(client, charlie, managed):
    client.force_login(charlie)
    assert client.get(f"/policies/{managed.pk}/edit/").status_code == 404
    assert client.post(f"/policies/{managed.pk}/edit/", form_data(confirm_managed="yes")).status_code == 404
