#!/usr/bin/env python3
"""An MCP server over stdio, in a language whose JSON has integers of any size (the official
SDKs' JavaScript cannot write one): tool "big" answers {"n": 2**70, "echo": <its arguments>}
as structured content, the integers written out whole."""
import json
import sys

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message.get("method")
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"],
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "bignum", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "big", "description": "2**70, and its arguments back.",
                             "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        value = {"n": 2**70, "echo": message["params"].get("arguments", {})}
        result = {"content": [{"type": "text", "text": json.dumps(value)}], "structuredContent": value}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
    sys.stdout.flush()
