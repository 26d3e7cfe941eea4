#!/usr/bin/env bash
# AG-UI's own client (@ag-ui/client's HttpAgent, pinned in package-lock.json) against sluicegate's
# AG-UI route: installs node_modules/; tests/server/protocols/test_ag_ui_client.py serves the app
# and runs client.mjs.
#   bash clients/ag-ui/run.sh --install-only  # what .ci/run does before the test suite
#   bash clients/ag-ui/run.sh                 # install, then run the test
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"
bash "$root/clients/npm-ci.sh"
[ "${1:-}" = "--install-only" ] && exit 0
cd "$root"
"$root/.venv/bin/python" -m pytest tests/server/protocols/test_ag_ui_client.py -q
