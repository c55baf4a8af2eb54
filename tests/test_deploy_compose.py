"""deploy/compose.yaml and the one-node steps in docs/deploy.md: every key the server is started with in
production reaches its containers."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_compose_gives_every_app_container_the_audit_signing_key():
    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    for service in ("migrate", "web", "worker", "beat"):
        environment = compose["services"][service]["environment"]
        assert environment["AUDIT_SIGNING_KEYS"] == "${AUDIT_SIGNING_KEYS:-}", service


def test_one_node_steps_make_an_audit_signing_key_before_starting():
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    one_node = deploy.split("## One node", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    assert "export AUDIT_SIGNING_KEYS=$(" in one_node
    assert one_node.index("AUDIT_SIGNING_KEYS") < one_node.index("up -d")
