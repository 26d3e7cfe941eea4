#!/usr/bin/env bash
# Real Mastra's HTTP server against `sluicegate serve`, field for field: installs the Mastra
# packages pinned in package-lock.json into node_modules/, then runs compare.py (which starts
# both servers on free ports) and fails on a difference allowlist.toml does not allow.
#   bash clients/wire/run.sh                 # install, compare, check the allowlist
#   bash clients/wire/run.sh --install-only  # what .ci/run does before tests/server/test_wire.py
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"
bash "$root/clients/npm-ci.sh"
[ "${1:-}" = "--install-only" ] && exit 0
"$root/.venv/bin/python" "$here/compare.py" --allowlist "$here/allowlist.toml" "$@"
