"""A stdio MCP server written by hand (no SDK), whose tool answers garbage: a line that is not
JSON (`garble`), or JSON-RPC whose result is not a tool result (`misshape`). For
tests/mcp/test_mcp_faults.py: `python -m tests.mcp.raw_server`."""

from __future__ import annotations

import json
import sys
from typing import Any


def answer(message_id: Any, result: Any = None, error: Any = None) -> None:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": message_id}
    body.update({"error": error} if error is not None else {"result": result})
    sys.stdout.write(json.dumps(body) + "\n")
    sys.stdout.flush()


TOOLS = [
    {"name": "garble", "inputSchema": {"type": "object"}},
    {"name": "misshape", "inputSchema": {"type": "object"}},
]

for line in sys.stdin:
    request = json.loads(line)
    method, message_id = request.get("method"), request.get("id")
    if message_id is None:  # a notification
        continue
    if method == "initialize":
        answer(
            message_id,
            {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"},
            },
        )
    elif method == "tools/list":
        answer(message_id, {"tools": TOOLS})
    elif method == "tools/call" and request["params"]["name"] == "garble":
        sys.stdout.write("}{ this is not JSON-RPC\n")
        sys.stdout.flush()
    elif method == "tools/call":
        answer(message_id, {"content": "not a list of blocks", "isError": "maybe"})
    else:
        answer(message_id, error={"code": -32601, "message": f"method not found: {method}"})
