#!/usr/bin/env bash
# The compose stack's secrets, in .env beside docker-compose.yaml (compose reads it; git ignores
# it): written once, on first use, and kept, so every component and every restart shares one
# Fernet key (connections encrypted in the metadata DB stay readable), one JWT secret and one
# API secret_key (task logs signed by a worker are readable through the api-server), the admin's
# name and password (no fixed admin:admin), and the warehouse writer's password.
set -euo pipefail
cd "$(dirname "$0")/.."
secret() { python3 -c 'import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())'; }
password() { secret | tr -d '=_-' | cut -c1-20; }
umask 077
if [ -s .env ] && grep -q '^_AIRFLOW_SECRET_KEY=' .env; then
  # an .env from before a key was added: the keys it lacks are appended, the others kept
  added=()
  grep -q '^_AIRFLOW_WWW_USER_USERNAME=' .env || { echo "_AIRFLOW_WWW_USER_USERNAME=admin" >>.env; added+=(admin name); }
  grep -q '^_LLMBENCH_WAREHOUSE_PASSWORD=' .env || { echo "_LLMBENCH_WAREHOUSE_PASSWORD=$(password)" >>.env; added+=(warehouse writer password); }
  [ ${#added[@]} -eq 0 ] || echo "llmbench: added to .env: ${added[*]}"
  exit 0
fi
[ -e .env ] && { echo "llmbench: .env exists without _AIRFLOW_SECRET_KEY; add it or move .env away" >&2; exit 1; }
cat >.env <<ENV
# Written by scripts/compose_env.sh on $(date -u +%F); never commit this file.
AIRFLOW__CORE__FERNET_KEY=$(secret)
_AIRFLOW_JWT_SECRET=$(secret)
_AIRFLOW_SECRET_KEY=$(secret)
_AIRFLOW_WWW_USER_USERNAME=admin
_AIRFLOW_WWW_USER_PASSWORD=$(password)
_LLMBENCH_WAREHOUSE_PASSWORD=$(password)
ENV
echo "llmbench: wrote .env (Fernet key, JWT secret, API secret_key, admin name and password, warehouse writer password)"
