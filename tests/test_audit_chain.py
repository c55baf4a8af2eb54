"""The tamper-evident audit log (issue 11 item 5): a per-tenant SHA-256 chain, verified by the API,
by `verify_audit_log`, and offline from an export with tenants/chain.py alone."""

import csv
import io
import json
import threading

import pytest
from api_support import create_policy, post_json, post_raw
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, connections
from django_scopes import scopes_disabled
from rest_framework.test import APIClient

from tenants import chain
from tenants.models import AuditEvent, Tenant

pytestmark = pytest.mark.django_db
ON_POSTGRES = connection.vendor == "postgresql"


def _events(tenant):
    with scopes_disabled():
        return list(AuditEvent.objects.filter(tenant=tenant).order_by("seq"))


def _tamper(sql: str, params):
    """Change stored rows behind the application's back, as someone with database access could.
    On PostgreSQL that takes switching off the append-only trigger first (a table owner can)."""
    with connection.cursor() as cursor:
        if ON_POSTGRES:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the test's pending FK checks, before ALTER
            cursor.execute("ALTER TABLE governance_auditevent DISABLE TRIGGER governance_auditevent_no_change")
        cursor.execute(sql, params)
        if ON_POSTGRES:
            cursor.execute("ALTER TABLE governance_auditevent ENABLE TRIGGER governance_auditevent_no_change")


def _some_history(api):
    policy = create_policy(api)
    api.patch(f"/api/v1/policies/{policy['id']}/", {"enabled": False}, format="json")
    api.patch(f"/api/v1/policies/{policy['id']}/", {"enabled": True}, format="json")
    return policy


def test_every_row_links_to_the_one_before(api, acme):
    _some_history(api)
    events = _events(acme)
    assert len(events) >= 4
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[0].prev_hash == chain.GENESIS
    for before, after in zip(events, events[1:]):
        assert after.prev_hash == before.hash
    acme.refresh_from_db()
    assert (acme.audit_seq, acme.audit_hash) == (events[-1].seq, events[-1].hash)
    body = api.get("/api/v1/audit-log/verify/").json()
    assert body == {"ok": True, "checked": len(events), "first_broken": None, "problem": "", "checkpoint": None}


def test_numbers_the_json_column_rewrites_keep_the_chain_intact(api, acme):
    # PostgreSQL's jsonb gives -0.0 back as 0.0 and 1e+16 as 10000000000000000: hashed as sent, an
    # untouched row failed verification.
    raw = '{"name": "Zero", "category": "grounding", "rules": {"min_grounding_score": -0.0}}'
    assert post_raw(api, "/api/v1/policies/", raw).status_code == 201
    assert api.get("/api/v1/audit-log/verify/").json()["ok"] is True
    assert chain.normalise({"a": -0.0, "b": 1e16, "c": 1.5e16, "d": 1e-7, "e": 100.0}) == {
        "a": 0.0,
        "b": 10**16,
        "c": 15 * 10**15,
        "d": 1e-7,
        "e": 100.0,
    }
    assert type(chain.normalise([1e16])[0]) is int and type(chain.normalise([100.0])[0]) is float


def test_a_raw_sql_edit_is_found_at_that_row(api, acme):
    _some_history(api)
    events = _events(acme)
    target = events[2]
    _tamper("UPDATE governance_auditevent SET actor_label = %s WHERE id = %s", ["mallory", target.pk])
    body = api.get("/api/v1/audit-log/verify/").json()
    assert body["ok"] is False and body["first_broken"] == target.pk and body["checked"] == 3
    with pytest.raises(CommandError, match=f"broken at row {target.pk}"):
        call_command("verify_audit_log", "acme")


def test_an_edit_of_the_json_data_is_found(api, acme):
    _some_history(api)
    target = _events(acme)[1]
    after = dict(target.after or {})
    after["rules"] = {"min_citations": 0}
    _tamper("UPDATE governance_auditevent SET after = %s WHERE id = %s", [json.dumps(after), target.pk])
    assert api.get("/api/v1/audit-log/verify/").json()["first_broken"] == target.pk


def test_a_deleted_row_is_found_in_the_middle_and_at_the_end(api, acme):
    _some_history(api)
    events = _events(acme)
    _tamper("DELETE FROM governance_auditevent WHERE id = %s", [events[-1].pk])
    body = api.get("/api/v1/audit-log/verify/").json()
    assert body["ok"] is False and body["first_broken"] == events[-2].pk  # the chain ends short of its head
    _tamper("DELETE FROM governance_auditevent WHERE id = %s", [events[1].pk])
    assert api.get("/api/v1/audit-log/verify/").json()["first_broken"] == events[2].pk


def test_the_command_passes_an_intact_log_and_refuses_an_unknown_tenant(api, acme, capsys):
    _some_history(api)
    call_command("verify_audit_log", "acme")
    assert "intact" in capsys.readouterr().out
    with pytest.raises(CommandError, match="No tenant"):
        call_command("verify_audit_log", "nope")


def test_tenants_have_separate_chains(api, other_api, acme, globex):
    _some_history(api)
    create_policy(other_api)
    assert _events(globex)[0].seq == 1
    _tamper("UPDATE governance_auditevent SET action = 'x' WHERE tenant_id = %s", [globex.pk])
    assert api.get("/api/v1/audit-log/verify/").json()["ok"] is True
    assert other_api.get("/api/v1/audit-log/verify/").json()["ok"] is False


def test_list_and_exports_carry_the_chain_and_check_offline(api, acme):
    _some_history(api)
    listed = api.get("/api/v1/audit-log/").json()["results"]
    assert {"seq", "prev_hash", "hash", "tenant_id"} <= set(listed[0])

    lines = b"".join(api.get("/api/v1/audit-log/export?format=jsonl").streaming_content).decode().splitlines()
    rows = [json.loads(line) for line in lines]
    assert chain.verify(sorted(rows, key=lambda r: r["seq"])).ok
    assert all(chain.hash_of_export_row(r) == r["hash"] for r in rows)

    text = b"".join(api.get("/api/v1/audit-log/export?format=csv").streaming_content).decode()
    csv_rows = []
    for row in csv.DictReader(io.StringIO(text)):
        row["before"] = json.loads(row["before"]) if row["before"] else None
        row["after"] = json.loads(row["after"]) if row["after"] else None
        csv_rows.append(row)
    assert chain.verify(sorted(csv_rows, key=lambda r: int(r["seq"]))).ok

    rows[1]["actor"] = "someone else"
    verdict = chain.verify(sorted(rows, key=lambda r: r["seq"]))
    assert not verdict.ok and verdict.first_broken == rows[1]["id"]


def test_verify_is_in_the_schema(api):
    assert "/api/v1/audit-log/verify/" in api.get("/api/v1/schema/?format=json").content.decode()


def test_verify_needs_a_key(acme):
    assert APIClient().get("/api/v1/audit-log/verify/").status_code == 401


@pytest.mark.skipif(not ON_POSTGRES, reason="row locks and parallel connections need PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_parallel_writers_never_fork_the_chain(acme_key, acme):
    raw = acme_key[1]
    errors, barrier = [], threading.Barrier(8)

    def writer(n):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        try:
            barrier.wait()
            for i in range(5):
                response = post_json(client, "/api/v1/policies/", {"name": f"p{n}-{i}", "category": "grounding"})
                if response.status_code != 201:
                    errors.append(response.content)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    events = _events(acme)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert len({e.prev_hash for e in events}) == len(events)  # no two rows claim one predecessor
    with scopes_disabled():
        tenant = Tenant.objects.get(pk=acme.pk)
    assert tenant.audit_seq == len(events)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get("/api/v1/audit-log/verify/").json()["ok"] is True
