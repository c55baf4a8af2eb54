#!/usr/bin/env sh
# Print a deploy/.env for deploy/compose.yaml: the public domain and freshly generated secrets.
#
#   deploy/make_env.sh groundrule.example.com > deploy/.env && chmod 600 deploy/.env
#
# Run it once. GOVERNANCE_SECRETS_KEY encrypts tenant secrets in the database and AUDIT_SIGNING_KEYS
# signs the audit checkpoints: copy both to your password manager or secrets vault now, apart from
# the database backups (docs/deploy.md).
set -eu
if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 DOMAIN   (the host name users will open, e.g. groundrule.example.com)" >&2
  exit 2
fi
secret() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }
echo "GROUNDRULE_DOMAIN=$1"
echo "POSTGRES_PASSWORD=$(secret 24)"
echo "SECRET_KEY=$(secret 48)"
echo "GOVERNANCE_SECRETS_KEY=$(secret 32)"
# An Ed25519 private key (32 random bytes, base64) that signs the audit checkpoints (docs/security.md).
echo "AUDIT_SIGNING_KEYS=audit-$(date +%Y%m%d):$(head -c 32 /dev/urandom | base64 | tr -d '\n')"
echo "METRICS_TOKEN=$(secret 24)"
