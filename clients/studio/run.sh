#!/usr/bin/env bash
# Mastra's Studio against sluicegate: installs the `mastra` CLI pinned in package-lock.json into
# node_modules/, then serves the app with `sluicegate serve --studio` on :4111 (not `dev`, whose
# reloader would watch this folder's node_modules/) allowing the origin http://localhost:3000,
# and `mastra studio` on :3000. Open http://localhost:3000.
#   bash clients/studio/run.sh [app.py]      # default: the two-agent app next to this script
#   bash clients/studio/run.sh --install-only  # what .ci/run does before the browser test
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"
bash "$root/clients/npm-ci.sh"
[ "${1:-}" = "--install-only" ] && exit 0
app="$(cd "$(dirname "${1:-$here/app.py}")" && pwd)/$(basename "${1:-$here/app.py}")"
SLUICEGATE_CORS_ORIGINS="${SLUICEGATE_CORS_ORIGINS:-http://localhost:3000}" \
  "$root/.venv/bin/python" -m sluicegate serve --studio "$app" --host 127.0.0.1 --port 4111 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
MASTRA_TELEMETRY_DISABLED=1 \
  ./node_modules/.bin/mastra studio --port 3000 --server-host localhost --server-port 4111
