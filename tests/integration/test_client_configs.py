"""Each client configuration docs/mcp.md shows, started the way its client starts it: the
command and arguments of a stdio entry (mcpServers, VS Code's servers, and what follows `--`
in `claude mcp add`), or the URL and headers of an HTTP entry, against the real server. Each
must answer initialize and list the cells' tools."""
import json
import os
import re
import shlex
import subprocess
import unittest
from urllib.parse import urlparse

from harness import BIN, tempdir
from mcp_peer import INIT, Http, Stdio, write_config

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, "..", "..", "docs", "mcp.md")
PACKAGED_CONFIG = "/etc/codecell/cells.json"
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def section():
    with open(DOC) as f:
        text = f.read()
    return text[text.index("## Connecting a client"):text.index("## The tools")]


def blocks(kind):
    return re.findall(rf"```{kind}\n(.*?)```", section(), flags=re.S)


def entries():
    """(where, entry) for every server entry of every JSON block."""
    for block in blocks("json"):
        doc = json.loads(block)
        for key in ("mcpServers", "servers"):
            for name, entry in doc.get(key, {}).items():
                yield key, entry


class ClientConfigs(unittest.TestCase):
    def setUp(self):
        d = tempdir(self)
        self.config = write_config(d, [{"name": "ruby", "language": "ruby", "pool": 0},
                                       {"name": "python", "language": "python", "pool": 0}])
        self.token = os.path.join(d, "token")
        with open(self.token, "w") as f:
            f.write("TOKEN\n")

    def over_stdio(self, command, args):
        self.assertEqual(command, "codecell")
        args = [self.config if a == PACKAGED_CONFIG else a for a in args]
        peer = Stdio(args[args.index("--config") + 1], *args[args.index("--config") + 2:])
        self.assertEqual(args[:2], ["serve", "--config"])
        try:
            self.assertIn("result", peer.request(INIT))
            peer.send(INITIALIZED)
            tools = peer.request(LIST)["result"]["tools"]
        finally:
            code, err = peer.close()
        self.assertEqual(code, 0, err)
        self.assertEqual(sorted(t["name"] for t in tools), ["python", "ruby", "sessions"])

    def over_http(self, url, headers):
        server = Http(self.config, "--token-file", self.token)
        try:
            parsed = urlparse(url)
            self.assertEqual((parsed.hostname, parsed.path), ("127.0.0.1", "/mcp"))
            status, h, text = server.post(INIT, headers)
            self.assertEqual(status, 200, text)
            session = {"Mcp-Session-Id": h["mcp-session-id"], **headers}
            server.post(INITIALIZED, session)
            status, _, text = server.post(LIST, session)
            self.assertEqual(status, 200, text)
            tools = json.loads(text)["result"]["tools"]
            self.assertEqual(sorted(t["name"] for t in tools), ["python", "ruby", "sessions"])
            # The token in the snippet is the one that opens the door.
            self.assertEqual(server.post(INIT)[0], 401)
        finally:
            self.assertEqual(server.stop(), 0)

    def test_json_entries(self):
        seen = set()
        for key, entry in entries():
            with self.subTest(key=key, entry=entry):
                if key == "servers":
                    self.assertIn(entry.get("type"), ("stdio", "http"), "VS Code needs a type")
                if "command" in entry:
                    self.over_stdio(entry["command"], entry["args"])
                    seen.add((key, "stdio"))
                else:
                    self.over_http(entry["url"], entry["headers"])
                    seen.add((key, "http"))
        self.assertEqual(seen, {("mcpServers", "stdio"), ("servers", "stdio"),
                                ("mcpServers", "http"), ("servers", "http")})

    def test_claude_mcp_add_lines(self):
        lines = [shlex.split(l) for b in blocks("sh") for l in b.splitlines()
                 if l.startswith("claude mcp add")]
        self.assertEqual(len(lines), 2)
        for words in lines:
            with self.subTest(words=words):
                if "--" in words:
                    command = words[words.index("--") + 1:]
                    self.over_stdio(command[0], command[1:])
                else:
                    self.assertIn("--transport", words)
                    url = next(w for w in words if w.startswith("http://"))
                    name, value = words[words.index("--header") + 1].split(": ", 1)
                    self.over_http(url, {name: value})


if __name__ == "__main__":
    unittest.main()
