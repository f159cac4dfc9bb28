// End to end through three real MCP programs: the official SDK client → codecell serve (stdio
// and Streamable HTTP) → the user's MCP servers (server-memory over stdio, server-everything over
// Streamable HTTP). The model's one code run makes many upstream calls.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = process.env.CODECELL_BIN ?? path.join(here, "..", "..", "build", "codecell");
const pkg = path.join(here, "node_modules", "@modelcontextprotocol");
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "codecell-upstream-"));
process.on("exit", () => fs.rmSync(scratch, { recursive: true, force: true }));

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function listening(port, child) {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error("the server exited");
    const ok = await new Promise((resolve) => {
      const c = net.connect(port, "127.0.0.1", () => { c.end(); resolve(true); });
      c.on("error", () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing listens on ${port}`);
}

const everythingPort = await freePort();
const everything = spawn(process.execPath, [path.join(pkg, "server-everything", "dist", "index.js"), "streamableHttp"],
  { env: { ...process.env, PORT: String(everythingPort) }, stdio: "ignore" });
// Not a reason for the test process to stay: killed when it exits.
everything.unref();
process.on("exit", () => everything.kill("SIGKILL"));
await listening(everythingPort, everything);

const config = path.join(scratch, "cells.json");
fs.writeFileSync(config, JSON.stringify({
  mcp_servers: {
    fixture: { command: [process.execPath, path.join(here, "upstream_fixture.mjs")] },
    memory: { command: [process.execPath, path.join(pkg, "server-memory", "dist", "index.js")],
              env: { MEMORY_FILE_PATH: path.join(scratch, "memory.jsonl") } },
    everything: { url: `http://127.0.0.1:${everythingPort}/mcp` },
  },
  cells: [
    { name: "ruby", language: "ruby", pool: 1, tools: ["memory.*", "everything.get_sum", "fixture.steps", "fixture.slow", "fixture.cancelled"] },
    { name: "python", language: "python", pool: 1, tools: ["memory.*", "everything.get_sum"] },
  ],
}));

function startHttpServe() {
  const server = spawn(bin, ["serve", "--config", config, "--http", "127.0.0.1:0"], { stdio: ["ignore", "ignore", "pipe"] });
  return new Promise((resolve, reject) => {
    let err = "";
    server.stderr.on("data", (chunk) => {
      err += chunk;
      const m = err.match(/listening on (http:\/\/\S+)/);
      if (m) resolve({ server, url: new URL(m[1]) });
    });
    server.on("exit", (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
}

const transports = {
  stdio: async () => ({ transport: new StdioClientTransport({ command: bin, args: ["serve", "--config", config], stderr: "ignore" }),
                        stop: async () => {} }),
  http: async () => {
    const { server, url } = await startHttpServe();
    return { transport: new StreamableHTTPClientTransport(url),
             stop: async () => { server.kill("SIGTERM"); await new Promise((r) => server.exitCode !== null ? r() : server.on("exit", r)); } };
  },
};

const code = {
  ruby: `names = (1..10).map { |i| "city-#{i}" }
Memory.create_entities(entities: names.map { |n| { name: n, entityType: "city", observations: ["#{n} is ruby's"] } })
Memory.create_relations(relations: names.each_cons(2).map { |a, b| { from: a, to: b, relationType: "next" } })
total = (1..17).sum { |i| Everything.get_sum(a: i, b: i)[/is (\\d+)/, 1].to_i }
graph = Memory.open_nodes(names: names)
{ entities: graph["entities"].size, relations: graph["relations"].size, total: total }`,
  python: `import re
names = [f"town-{i}" for i in range(1, 11)]
memory.create_entities(entities=[{"name": n, "entityType": "town", "observations": [n + " is python's"]} for n in names])
memory.create_relations(relations=[{"from": a, "to": b, "relationType": "next"} for a, b in zip(names, names[1:])])
total = sum(int(re.search(r"is (\\d+)", everything.get_sum(a=i, b=i)).group(1)) for i in range(1, 18))
graph = memory.open_nodes(names=names)
{"entities": len(graph["entities"]), "relations": len(graph["relations"]), "total": total}`,
};

for (const [kind, make] of Object.entries(transports)) {
  describe(`SDK client over ${kind} → codecell serve → MCP servers`, () => {
    let client, stop;
    before(async () => {
      const t = await make();
      stop = t.stop;
      client = new Client({ name: "codecell-upstream-tests", version: "1.0.0" });
      await client.connect(t.transport);
    });
    after(async () => {
      await client.close();
      await stop();
    });

    test("the description shows the servers' tools as signatures", async () => {
      const { tools } = await client.listTools();
      const ruby = tools.find((t) => t.name === "ruby");
      const python = tools.find((t) => t.name === "python");
      assert.match(ruby.description, /Memory\.create_entities\(entities: Array<\{name: String, entityType: String, observations: Array<String>\}>\)/);
      assert.match(python.description, /memory\.create_entities\(entities: list\[\{name: str, entityType: str, observations: list\[str\]\}\]\)/);
      assert.match(python.description, /everything\.get_sum\(a: float, b: float\)/);
    });

    test("an upstream tool's progress reaches the client", async () => {
      const seen = [];
      const r = await client.callTool({ name: "ruby", arguments: { code: "Fixture.steps(n: 8, ms: 400)" } },
        undefined, { onprogress: (p) => seen.push(p.message), timeout: 60000 });
      assert.equal(r.structuredContent.value, 8, JSON.stringify(r.structuredContent));
      assert.ok(seen.some((m) => /^fixture\.steps: \d\/8 step \d$/.test(m)), JSON.stringify(seen));
    });

    test("a client's cancellation reaches the upstream call", async () => {
      const count = async () => (await client.callTool({ name: "ruby", arguments: { code: "Fixture.cancelled" } }))
        .structuredContent.value.cancelled;
      const before = await count();
      const controller = new AbortController();
      const call = client.callTool({ name: "ruby", arguments: { code: "Fixture.slow(ms: 60000)" } }, undefined,
        { signal: controller.signal, timeout: 120000 });
      // Cancelled once the guest waits on the upstream call: the fixture is then counting it.
      setTimeout(() => controller.abort("enough"), 1500);
      await assert.rejects(call);
      const deadline = Date.now() + 30000;
      let after = before;
      while (after === before && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        after = await count();
      }
      assert.equal(after, before + 1);
    });

    for (const lang of ["ruby", "python"]) {
      test(`one ${lang} run makes 20 upstream calls`, async () => {
        const r = await client.callTool({ name: lang, arguments: { code: code[lang] } });
        assert.equal(r.structuredContent.status, "ok", JSON.stringify(r.structuredContent));
        // 1 + 1 + 17 + 1 calls; the entities and relations are counted by the server itself.
        assert.deepEqual(r.structuredContent.value, { entities: 10, relations: 9, total: 306 });
      });
    }
  });
}
