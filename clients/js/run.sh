#!/usr/bin/env bash
# Start a sluicegate server on the example app, then drive it with the unmodified
# @mastra/client-js (pinned in package-lock.json). Used by .ci/run; needs node and npm.
# With SLUICEGATE_API_TOKEN set, the server requires it and the client sends it.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root/clients/js"
bash "$root/clients/npm-ci.sh"
port="${SLUICEGATE_TEST_PORT:-$("$root/.venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
db="$(mktemp -d)/client-js.db"
SLUICEGATE_TEST_DB="$db" "$root/.venv/bin/python" -m sluicegate serve "$root/tests/server/example_app.py" \
  --host 127.0.0.1 --port "$port" >"$(dirname "$db")/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  if curl -fsS "http://127.0.0.1:$port/api" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$server" 2>/dev/null; then cat "$(dirname "$db")/server.log"; exit 1; fi
  sleep 0.5
done
# A second server: the sub-agents of the example app (`boss`), for the nested approval test.
port2="$("$root/.venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
SLUICEGATE_TEST_DB="$db.boss" "$root/.venv/bin/python" -m sluicegate serve "$root/tests/server/example_app.py:boss" \
  --host 127.0.0.1 --port "$port2" >"$(dirname "$db")/server2.log" 2>&1 &
server2=$!
trap 'kill "$server" "$server2" 2>/dev/null || true; wait "$server" "$server2" 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  if curl -fsS "http://127.0.0.1:$port2/api" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$server2" 2>/dev/null; then cat "$(dirname "$db")/server2.log"; exit 1; fi
  sleep 0.5
done
SLUICEGATE_URL="http://127.0.0.1:$port" SLUICEGATE_SUB_AGENTS_URL="http://127.0.0.1:$port2" \
  node --test client.test.mjs
