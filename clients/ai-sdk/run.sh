#!/usr/bin/env bash
# The AI SDK's own clients (ai v5, the current ai, useChat from @ai-sdk/react) against
# POST /chat/{agentId}: installs the packages pinned in package-lock.json, then runs the tests
# that drive them (tests/server/protocols/test_ai_sdk_*.py build the useChat page with esbuild).
#   bash clients/ai-sdk/run.sh                 # install, then run those tests
#   bash clients/ai-sdk/run.sh --install-only  # what .ci/run does before the test suite
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"
bash "$root/clients/npm-ci.sh"
[ "${1:-}" = "--install-only" ] && exit 0
cd "$root"
SLUICEGATE_REQUIRE_SERVICES=1 "$root/.venv/bin/python" -m pytest tests/server/protocols -q -k ai_sdk "$@"
