#!/usr/bin/env bash
# MCP peers nobody here wrote (pinned in package-lock.json): @modelcontextprotocol/server-everything
# as a server for sluicegate's MCPClient; the MCP Inspector's CLI, @mastra/mcp's MCPClient and the
# unmodified @mastra/client-js as clients of `sluicegate serve`. Needs node and npm.
#   bash clients/mcp/run.sh                 # install, then run tests/mcp/test_mcp_peers.py
#   bash clients/mcp/run.sh --install-only  # what .ci/run does before the test suite
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"
bash "$root/clients/npm-ci.sh"
[ "${1:-}" = "--install-only" ] && exit 0
cd "$root"
SLUICEGATE_REQUIRE_SERVICES=1 "$root/.venv/bin/python" -m pytest tests/mcp/test_mcp_peers.py -q "$@"
