"""Signed audit checkpoints: a rewrite of the chain from inside the database, every later hash and the
head recomputed, passes the plain verification and is caught against a checkpoint held outside it."""

import base64
import json
import re
from pathlib import Path

import pytest
from api_support import create_policy, post_json
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from django.conf import settings
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django_scopes import scope, scopes_disabled
from rest_framework.test import APIClient
from webhook_receiver import WebhookReceiver

from core import signing_keys
from governance.tasks import publish_audit_checkpoints
from tenants import chain
from tenants.audit import Actor, audit_chain_verify, audit_record
from tenants.models import AuditEvent, Tenant
from tenants.signed_checkpoints import checkpoint_sign, checkpoints_check
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db
ON_POSTGRES = connection.vendor == "postgresql"
ROOT = Path(__file__).resolve().parent.parent
OLD_KEY = "old-2025:" + base64.b64encode(bytes(range(32))).decode()
NEW_KEY = "new-2026:" + base64.b64encode(bytes(range(32, 64))).decode()


def _history(tenant, rows: int) -> None:
    with scope(tenant=tenant):
        for n in range(rows):
            audit_record(tenant=tenant, action="tests.thing.changed", actor=Actor.system(), after={"n": n})


def _events(tenant) -> list[AuditEvent]:
    with scopes_disabled():
        return list(AuditEvent.objects.filter(tenant=tenant).order_by("seq"))


def _rewrite_from_inside(tenant, seq: int) -> None:
    """The attack: with the append-only trigger bypassed, change row `seq`, recompute the hash of it and
    of every later row with tenants/chain.py, and move the tenant's head to the new last hash."""
    rows = _events(tenant)
    previous = rows[seq - 2].hash if seq > 1 else chain.GENESIS
    with connection.cursor() as cursor:
        if ON_POSTGRES:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute("SET LOCAL session_replication_role = replica")  # triggers off, as a superuser can
        for row in rows[seq - 1 :]:
            actor = "mallory" if row.seq == seq else row.actor_label
            digest = chain.row_hash(
                tenant=tenant.pk,
                seq=row.seq,
                time=row.created_at,
                actor=actor,
                action=row.action,
                object_type=row.object_type,
                object_id=row.object_id,
                object_repr=row.object_repr,
                before=row.before,
                after=row.after,
                request_id=row.request_id,
                prev_hash=previous,
            )
            cursor.execute(
                "UPDATE governance_auditevent SET actor_label = %s, prev_hash = %s, hash = %s WHERE id = %s",
                [actor, previous, digest, row.pk],
            )
            previous = digest
        cursor.execute("UPDATE tenants_tenant SET audit_hash = %s WHERE id = %s", [previous, tenant.pk])
        if ON_POSTGRES:
            cursor.execute("SET LOCAL session_replication_role = origin")


def _checkpoint(client) -> dict:
    response = client.get("/api/v1/audit-log/checkpoint/")
    assert response.status_code == 200, response.content
    return response.json()


def _verify(client, checkpoint):
    return post_json(client, "/api/v1/audit-log/verify/", checkpoint)


def test_a_checkpoint_is_the_head_signed_with_a_published_key(api, acme):
    _history(acme, 3)
    body = _checkpoint(api)
    acme.refresh_from_db()
    assert set(body) == {"tenant", "seq", "hash", "signed_at", "key_id", "signature"}
    assert (body["tenant"], body["seq"], body["hash"]) == ("acme", 5, acme.audit_hash)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", body["signed_at"])
    keys = APIClient().get("/api/v1/audit-log/keys/")  # public keys need no API key
    assert keys.status_code == 200
    published = {k["key_id"]: k for k in keys.json()["keys"]}
    assert published[body["key_id"]]["active"] is True and published[body["key_id"]]["algorithm"] == "ed25519"
    public = Ed25519PublicKey.from_public_bytes(base64.b64decode(published[body["key_id"]]["public_key"]))
    signed = f"groundrule-audit-checkpoint/1\ntenant acme\nseq 5\nhash {body['hash']}\nsigned_at {body['signed_at']}\n"
    public.verify(base64.b64decode(body["signature"]), signed.encode())  # raises if it does not verify


def test_an_empty_chain_is_signed_at_seq_zero_and_verifies(db):
    empty = Tenant.objects.create(slug="empty")
    with scope(tenant=empty):
        held = checkpoint_sign(tenant=empty)
        assert (held["seq"], held["hash"]) == (0, "0" * 64)
        assert audit_chain_verify(tenant=empty, expect=checkpoints_check([held], tenant=empty)).ok


def test_the_rewrite_from_inside_the_database_passes_plain_verify_and_fails_against_the_checkpoint(api, acme):
    _history(acme, 28)  # rows 1 and 2: the tenant and its API key
    held = _checkpoint(api)
    assert held["seq"] == 30
    assert _verify(api, held).json()["ok"] is True

    _rewrite_from_inside(acme, 20)
    assert _events(acme)[19].actor_label == "mallory"
    # The limit: rows and head are all in the database, and all were recomputed.
    assert api.get("/api/v1/audit-log/verify/").json()["ok"] is True
    call_command("verify_audit_log", "acme")

    answer = _verify(api, held)
    assert answer.status_code == 200
    body = answer.json()
    assert body["ok"] is False
    assert body["first_broken"] == _events(acme)[29].pk  # the row whose hash the checkpoint signed
    assert body["problem"] == (
        "the chain no longer leads to the signed checkpoint at seq 30: its hash there differs, so one of rows 1 "
        "to 30 was changed, inserted or removed and the later hashes recomputed"
    )


def test_several_published_checkpoints_narrow_the_rewritten_rows(api, acme, tmp_path, capsys):
    _history(acme, 13)
    first = _checkpoint(api)
    _history(acme, 10)
    second = _checkpoint(api)
    _history(acme, 5)
    held = tmp_path / "acme.jsonl"
    held.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    call_command("verify_audit_log", "acme", checkpoint=str(held))
    assert "intact: 30 rows checked and it leads to the 2 signed checkpoint(s) given" in capsys.readouterr().out

    _rewrite_from_inside(acme, 20)
    with pytest.raises(CommandError) as refused:
        call_command("verify_audit_log", "acme", checkpoint=str(held))
    row_25 = _events(acme)[24].pk
    assert str(refused.value) == (
        f"Audit log of 'acme' broken at row {row_25} (the chain no longer leads to the signed checkpoint at seq "
        "25: its hash there differs, so one of rows 16 to 25 was changed, inserted or removed and the later "
        "hashes recomputed); 25 rows checked."
    )


def test_rows_removed_from_the_end_with_the_head_moved_back_are_caught(api, acme):
    _history(acme, 4)
    held = _checkpoint(api)
    last = _events(acme)[-1]
    with connection.cursor() as cursor:
        if ON_POSTGRES:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute("DELETE FROM governance_auditevent WHERE id = %s", [last.pk])
        cursor.execute(
            "UPDATE tenants_tenant SET audit_seq = 5, audit_hash = %s WHERE id = %s", [_events(acme)[-1].hash, acme.pk]
        )
        if ON_POSTGRES:
            cursor.execute("SET LOCAL session_replication_role = origin")
    assert api.get("/api/v1/audit-log/verify/").json()["ok"] is True
    body = _verify(api, held).json()
    assert body["ok"] is False
    assert body["problem"] == "the chain ends at seq 5, before the checkpoint's seq 6: rows were removed from its end"


def test_a_forged_or_foreign_checkpoint_is_refused_naming_the_field(api, other_api, acme, globex):
    held = _checkpoint(api)

    forged = {**held, "seq": held["seq"] - 1}
    answer = _verify(api, forged)
    assert answer.status_code == 400
    mismatch = f"The signature does not match this checkpoint under key '{held['key_id']}'."
    assert answer.json() == {"signature": [mismatch]}

    unknown = _verify(api, {**held, "key_id": "someone-else"}).json()
    assert unknown == {
        "key_id": [
            "Unknown key id 'someone-else': not among this deployment's audit keys (GET /api/v1/audit-log/keys/)."
        ]
    }
    assert _verify(api, {**held, "signature": "bm90IGEgc2lnbmF0dXJl"}).json() == {
        "signature": ["Must be the base64 of a 64-byte Ed25519 signature."]
    }
    assert _verify(other_api, held).json() == {"tenant": ["This checkpoint was signed for another tenant."]}
    missing = _verify(api, {k: v for k, v in held.items() if k != "hash"})
    assert missing.status_code == 400 and "hash" in missing.json()
    unknown_field = _verify(api, {**held, "extra": 1})
    assert unknown_field.status_code == 400 and "extra" in json.dumps(unknown_field.json())


def test_rotated_keys_still_verify_what_they_signed(api, acme, settings):
    _history(acme, 2)
    settings.AUDIT_KEYS = signing_keys.parse_keys(OLD_KEY)
    signed_by_old = _checkpoint(api)
    assert signed_by_old["key_id"] == "old-2025"

    # Rotation: the new key signs; the old one's public half stays, in AUDIT_VERIFY_KEYS.
    old_public = "old-2025:" + signing_keys.public_b64(signing_keys.parse_keys(OLD_KEY).signer)
    settings.AUDIT_KEYS = signing_keys.parse_keys(NEW_KEY, old_public)
    assert _checkpoint(api)["key_id"] == "new-2026"
    keys = APIClient().get("/api/v1/audit-log/keys/").json()["keys"]
    assert [(k["key_id"], k["active"]) for k in keys] == [("new-2026", True), ("old-2025", False)]
    assert _verify(api, signed_by_old).json()["ok"] is True

    # Dropped altogether, the old key's checkpoints are refused by name.
    settings.AUDIT_KEYS = signing_keys.parse_keys(NEW_KEY)
    assert "key_id" in _verify(api, signed_by_old).json()


def test_without_a_signing_key_the_checkpoint_is_a_503_naming_the_setting(api, acme, settings):
    settings.AUDIT_KEYS = signing_keys.parse_keys("")
    answer = api.get("/api/v1/audit-log/checkpoint/")
    assert answer.status_code == 503
    assert answer.json()["detail"] == "Audit checkpoints are not signed in this deployment: set AUDIT_SIGNING_KEYS."


def test_checkpoints_need_a_key_and_tenants_see_only_their_own(api, other_api, acme, globex):
    assert APIClient().get("/api/v1/audit-log/checkpoint/").status_code == 401
    assert APIClient().post("/api/v1/audit-log/verify/", {}, format="json").status_code == 401
    _history(acme, 4)
    theirs = _checkpoint(other_api)
    assert (theirs["tenant"], theirs["seq"]) == ("globex", 2)  # the tenant and its API key


def test_key_settings_that_do_not_parse_name_the_entry():
    with pytest.raises(ValueError, match="AUDIT_SIGNING_KEYS: the key of 'short' is not 32 bytes"):
        signing_keys.parse_keys("short:AAAA")
    with pytest.raises(ValueError, match="is not '<key id>:<base64 key>'"):
        signing_keys.parse_keys("no-colon-here")
    with pytest.raises(ValueError, match="AUDIT_VERIFY_KEYS: key id 'old-2025' is listed twice"):
        signing_keys.parse_keys(OLD_KEY, OLD_KEY)


def test_generate_prints_a_key_line_the_settings_accept(capsys):
    call_command("audit_signing_key", "generate", "--id", "prod-2027")
    out = capsys.readouterr()
    line = out.out.strip().splitlines()[-1]
    ring = signing_keys.parse_keys(line)
    assert ring.signer_id == "prod-2027"
    assert f"prod-2027:{signing_keys.public_b64(ring.signer)}" in out.err


@pytest.fixture
def published_dir(tmp_path, settings):
    settings.AUDIT_CHECKPOINT_DIR = str(tmp_path / "checkpoints")
    yield tmp_path / "checkpoints"
    cache.clear()  # webhook subscriptions are cached by tenant id, and ids come back after a rollback


def test_beat_publishes_each_moved_head_once_to_the_directory_and_the_webhooks(
    api, acme, published_dir, django_capture_on_commit_callbacks, settings
):
    assert "governance.publish_audit_checkpoints" in {e["task"] for e in settings.CELERY_BEAT_SCHEDULE.values()}
    settings.WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]
    with WebhookReceiver() as receiver:
        hook = post_json(api, "/api/v1/webhooks/", {"url": receiver.url, "events": ["audit.checkpoint"]})
        assert hook.status_code == 201, hook.json()
        _history(acme, 3)
        with django_capture_on_commit_callbacks(execute=True):
            assert publish_audit_checkpoints.delay().get() == {"file": 1, "webhook": 1}
        # Nothing moved: nothing new anywhere.
        with django_capture_on_commit_callbacks(execute=True):
            assert publish_audit_checkpoints.delay().get() == {"file": 0, "webhook": 0}
        create_policy(api)
        with django_capture_on_commit_callbacks(execute=True):
            assert publish_audit_checkpoints.delay().get() == {"file": 1, "webhook": 1}

    lines = [json.loads(line) for line in (published_dir / "acme.jsonl").read_text().splitlines()]
    assert [c["seq"] for c in lines] == [6, 7]  # the tenant, its API key and the webhook are rows 1 to 3
    delivered = [json.loads(r.body) for r in receiver.received]
    assert [(d["event"], d["data"]) for d in delivered] == [("audit.checkpoint", c) for c in lines]
    with scopes_disabled():
        assert WebhookDelivery.objects.filter(tenant=acme, status="succeeded").count() == 2
    # What was published verifies the log as it is.
    call_command("verify_audit_log", "acme", checkpoint=str(published_dir / "acme.jsonl"))


def test_the_evidence_pack_carries_a_signed_head_that_verifies(api, acme):
    run = post_json(api, "/api/v1/runs/", {"agent_name": "research-agent"}).json()
    _history(acme, 2)
    pack = api.get(f"/api/v1/runs/{run['id']}/evidence/").json()
    acme.refresh_from_db()
    assert pack["audit_checkpoint"]["seq"] == acme.audit_seq
    assert [k["key_id"] for k in pack["audit_keys"]] == [settings.AUDIT_KEYS.signer_id]
    assert _verify(api, pack["audit_checkpoint"]).json()["ok"] is True


def test_the_offline_verification_in_the_docs_runs(api, acme):
    _history(acme, 3)
    held = _checkpoint(api)
    keys = APIClient().get("/api/v1/audit-log/keys/").json()
    snippet = re.search(r"```python\n(# verify_checkpoint\.py.*?)```", (ROOT / "docs/security.md").read_text(), re.S)
    assert snippet, "docs/security.md lost its offline verification snippet"
    namespace: dict = {}
    exec(snippet.group(1), namespace)  # the documented code, run as an auditor would
    assert namespace["verify_checkpoint"](held, keys) is True
    assert namespace["verify_checkpoint"]({**held, "seq": held["seq"] + 1}, keys) is False
    # The rest of the offline check: the exported rows lead to the signed hash.
    lines = b"".join(api.get("/api/v1/audit-log/export?format=jsonl").streaming_content).decode().splitlines()
    rows = sorted((json.loads(line) for line in lines), key=lambda r: r["seq"])
    assert chain.verify(rows, expect={held["seq"]: held["hash"]}).ok
    assert not chain.verify(rows, expect={held["seq"]: "f" * 64}).ok
