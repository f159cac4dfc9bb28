// Approval before effects over MCP 2025-11-25 (and 2026-07-28 by input_required, below), with the official SDK client
// (@modelcontextprotocol/sdk) and its elicitation handler, over stdio and Streamable HTTP: a
// command tool marked "approval": "always" writes a file on the host only when the person
// accepts; a decline, a client without the elicitation capability and a client that never
// answers leave no file, and the guest rescues the error; in Ruby and in Python. The
// operator's log records every decision.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from "@modelcontextprotocol/client";
import { StdioClientTransport as ModernStdio } from "@modelcontextprotocol/client/stdio";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = process.env.CODECELL_BIN ?? path.join(here, "..", "..", "build", "codecell");
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "codecell-approval-"));
const effects = path.join(scratch, "effects");
fs.mkdirSync(effects);
process.on("exit", () => fs.rmSync(scratch, { recursive: true, force: true }));

// The tool's effect: a file named by its argument, in a folder of the host.
const writer = `import json, os, sys
args = json.load(sys.stdin)
name = os.path.basename(args["name"])
with open(os.path.join(sys.argv[1], name), "w") as f:
    f.write("written")
print("true")`;
const config = path.join(scratch, "cells.json");
fs.writeFileSync(config, JSON.stringify({
  tools: [{
    name: "write",
    description: "Writes a file on the host.",
    command: ["/usr/bin/python3", "-c", writer, effects],
    input_schema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
    approval: "always",
  }],
  cells: [
    { name: "ruby", language: "ruby", pool: 0, sessions: { enabled: false }, tools: ["write"],
      limits: { timeout_ms: 20000, approval_ms: 1500 } },
    { name: "python", language: "python", pool: 0, sessions: { enabled: false }, tools: ["write"],
      limits: { timeout_ms: 20000, approval_ms: 1500 } },
    // Calls at once, each asked about: the person's answers take their time on a loaded host.
    { name: "ruby_at_once", language: "ruby", pool: 0, sessions: { enabled: false }, tools: ["write"],
      limits: { timeout_ms: 20000, approval_ms: 60000 } },
    { name: "python_at_once", language: "python", pool: 0, sessions: { enabled: false }, tools: ["write"],
      limits: { timeout_ms: 20000, approval_ms: 60000 } },
  ],
}));

const code = {
  ruby: (name) => `begin; SB.call("write", name: ${JSON.stringify(name)}); rescue SB::ToolError => e; "refused: " + e.message; end`,
  python: (name) => `try:\n    m = sb.call("write", name=${JSON.stringify(name)})\nexcept sb.ToolError as e:\n    m = "refused: " + str(e)\nm`,
};
// Two calls at once (tool_concurrency): SB.parallel and asyncio.gather.
const atOnce = {
  ruby: (a, b) => `SB.parallel { |p| p.call("write", name: ${JSON.stringify(a)}); p.call("write", name: ${JSON.stringify(b)}) }`,
  python: (a, b) => `import asyncio\nlist(await asyncio.gather(sb.acall("write", name=${JSON.stringify(a)}), sb.acall("write", name=${JSON.stringify(b)})))`,
};
// The same, each call's error message in place of its answer.
const atOnceRescued = {
  ruby: (a, b) => `fs = []\nSB.parallel { |p| fs << p.call("write", name: ${JSON.stringify(a)}); fs << p.call("write", name: ${JSON.stringify(b)}) } rescue SB::ToolError\nfs.map { |f| begin; f.value; rescue SB::ToolError => e; e.message; end }`,
  python: (a, b) => `import asyncio\nr = await asyncio.gather(sb.acall("write", name=${JSON.stringify(a)}), sb.acall("write", name=${JSON.stringify(b)}), return_exceptions=True)\n[str(x) if isinstance(x, Exception) else x for x in r]`,
};
const unrescued = {
  ruby: (name) => `SB.call("write", name: ${JSON.stringify(name)})`,
  python: (name) => `sb.call("write", name=${JSON.stringify(name)})`,
};

function serve(kind, log) {
  const args = ["serve", "--config", config, "--log", log];
  if (kind === "stdio")
    return { transport: () => new StdioClientTransport({ command: bin, args, stderr: "ignore" }), stop: async () => {} };
  const child = spawn(bin, [...args, "--http", "127.0.0.1:0"], { stdio: ["ignore", "ignore", "pipe"] });
  const url = new Promise((resolve, reject) => {
    let err = "";
    child.stderr.on("data", (chunk) => {
      err += chunk;
      const m = err.match(/listening on (http:\/\/\S+)/);
      if (m) resolve(m[1]);
    });
    child.on("exit", (c) => reject(new Error(`serve exited ${c}: ${err}`)));
  });
  return {
    url,
    transport: async () => new StreamableHTTPClientTransport(new URL(await url)),
    stop: async () => {
      child.kill("SIGTERM");
      if (child.exitCode === null) await new Promise((r) => child.on("exit", r));
    },
  };
}

// A client whose person answers with `answer` (a function of the request), or one without
// the elicitation capability (answer null).
async function connect(server, answer) {
  const client = new Client({ name: "approval-tests", version: "1.0.0" },
                            answer ? { capabilities: { elicitation: { form: {} } } } : {});
  const asked = [];
  if (answer)
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params);
      return answer(request);
    });
  await client.connect(await server.transport());
  return { client, asked };
}

const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
const value = (r) => r.structuredContent?.value;
const exists = (name) => fs.existsSync(path.join(effects, name));

for (const kind of ["stdio", "http"]) {
  describe(`over ${kind}`, () => {
    const log = path.join(scratch, `${kind}.log`);
    let server;
    before(() => { server = serve(kind, log); });
    after(async () => server.stop());

    for (const lang of ["ruby", "python"]) {
      test(`${lang}: accepted, the tool runs; the person saw the tool and its arguments`, async () => {
        const { client, asked } = await connect(server, async () => ({ action: "accept", content: {} }));
        const name = `${kind}-${lang}-accepted`;
        const r = await client.callTool({ name: lang, arguments: { code: code[lang](name) } });
        assert.equal(value(r), true, text(r));
        assert.ok(exists(name), "the tool wrote its file");
        assert.equal(asked.length, 1);
        assert.equal(asked[0].mode, "form");
        assert.match(asked[0].message, /"write"/);
        assert.ok(asked[0].message.includes(name), asked[0].message);
        assert.deepEqual(asked[0].requestedSchema, { type: "object", properties: {} });
        await client.close();
      });

      test(`${lang}: declined, the tool never runs and the guest rescues the error`, async () => {
        const { client, asked } = await connect(server, async () => ({ action: "decline" }));
        const name = `${kind}-${lang}-declined`;
        const r = await client.callTool({ name: lang, arguments: { code: code[lang](name) } });
        assert.match(value(r), /^refused: approval declined: the call of "write" was not allowed: the person declined it/);
        assert.equal(exists(name), false);
        assert.equal(asked.length, 1);
        // Unrescued, the run ends in error: an isError answer.
        const u = await client.callTool({ name: lang, arguments: { code: unrescued[lang](name) } });
        assert.equal(u.isError, true);
        assert.match(text(u), /approval declined/);
        assert.equal(exists(name), false);
        await client.close();
      });

      test(`${lang}: two calls at once are asked about at once`, async () => {
        // The person answers only once both questions are out: had the calls been asked one
        // after the other, the first would wait here and be declined after 30 s.
        let both;
        const out = new Promise((resolve) => { both = resolve; });
        let count = 0;
        const { client, asked } = await connect(server, async () => {
          if (++count === 2) both();
          const together = await Promise.race([out.then(() => true),
            new Promise((r) => setTimeout(() => r(false), 30000))]);
          return together ? { action: "accept", content: {} } : { action: "decline" };
        });
        const [a, b] = [`${kind}-${lang}-once-a`, `${kind}-${lang}-once-b`];
        const r = await client.callTool({ name: `${lang}_at_once`, arguments: { code: atOnce[lang](a, b) } });
        assert.deepEqual(value(r), [true, true], text(r));
        assert.ok(exists(a) && exists(b));
        assert.equal(asked.length, 2);
        await client.close();
      });

      test(`${lang}: a client without elicitation gets "approval needed"`, async () => {
        const { client } = await connect(server, null);
        const name = `${kind}-${lang}-unasked`;
        const r = await client.callTool({ name: lang, arguments: { code: code[lang](name) } });
        assert.match(value(r), /^refused: approval needed: "write" could not be approved: the MCP client cannot ask a person/);
        const u = await client.callTool({ name: lang, arguments: { code: unrescued[lang](name) } });
        assert.equal(u.isError, true);
        assert.match(text(u), /approval needed/);
        assert.equal(exists(name), false);
        await client.close();
      });

      test(`${lang}: a person who never answers: the call times out, the tool never runs`, async () => {
        const { client, asked } = await connect(server, () => new Promise(() => {}));
        const name = `${kind}-${lang}-unanswered`;
        const start = Date.now();
        const r = await client.callTool({ name: lang, arguments: { code: code[lang](name) } });
        assert.match(value(r), /^refused: approval needed: (nobody allowed "write" within 1500 ms|"write" could not be approved: nobody answered within 1500 ms)/);
        assert.ok(Date.now() - start >= 1400, "it waited for approval_ms");
        assert.equal(asked.length, 1);
        assert.equal(exists(name), false);
        await client.close();
      });
    }

    test("the operator's log records every decision", async () => {
      await server.stop();
      const lines = fs.readFileSync(log, "utf8").trim().split("\n").map((l) => JSON.parse(l))
        .filter((l) => l.event === "approval");
      const decisions = lines.map((l) => `${l.cell}:${l.decision}`).sort();
      assert.deepEqual(decisions, [
        "python:accepted", "python:declined", "python:declined", "python:timeout",
        "python:unavailable", "python:unavailable",
        "python_at_once:accepted", "python_at_once:accepted",
        "ruby:accepted", "ruby:declined", "ruby:declined", "ruby:timeout",
        "ruby:unavailable", "ruby:unavailable",
        "ruby_at_once:accepted", "ruby_at_once:accepted",
      ]);
      assert.ok(lines.every((l) => l.tool === "write" && /^m\d+$/.test(l.client)), JSON.stringify(lines));
      server = { stop: async () => {} };
    });
  });
}

// 2026-07-28, over stdio and HTTP: the question is an input_required result (MRTR); the client
// (@modelcontextprotocol/client, autoFulfill) asks its elicitation handler and retries with
// inputResponses and the requestState, and the retry gets the run's answer.
for (const kind of ["stdio", "http"]) describe(`2026-07-28 over ${kind}`, () => {
  const log = path.join(scratch, `modern-${kind}.log`);
  let server;
  before(() => { if (kind === "http") server = serve("http", log); });
  after(async () => server?.stop());
  async function modern(answer) {
    const client = new ModernClient({ name: "approval-tests", version: "1.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } },
        ...(answer && { capabilities: { elicitation: { form: {} } } }) });
    const asked = [];
    if (answer)
      client.setRequestHandler("elicitation/create", async (request) => {
        asked.push(request.params);
        return answer(request);
      });
    await client.connect(kind === "stdio"
      ? new ModernStdio({ command: bin, args: ["serve", "--config", config, "--log", log], stderr: "ignore" })
      : new ModernHttp(new URL(await server.url)));
    return { client, asked };
  }

  for (const lang of ["ruby", "python"]) {
    test(`${lang}: accepted through input_required, the tool runs`, async () => {
      const { client, asked } = await modern(async () => ({ action: "accept", content: {} }));
      const name = `modern-${kind}-${lang}-accepted`;
      const r = await client.callTool({ name: lang, arguments: { code: code[lang](name) } });
      assert.equal(value(r), true, text(r));
      assert.ok(exists(name));
      assert.equal(asked.length, 1);
      assert.ok(asked[0].message.includes(name));
      await client.close();
    });

    test(`${lang}: declined through input_required, the tool never runs`, async () => {
      const { client, asked } = await modern(async () => ({ action: "decline" }));
      const name = `modern-${kind}-${lang}-declined`;
      const r = await client.callTool({ name: lang, arguments: { code: code[lang](name) } });
      assert.match(value(r), /^refused: approval declined/);
      assert.equal(exists(name), false);
      assert.equal(asked.length, 1);
      await client.close();
    });

    test(`${lang}: two calls at once are asked about in turn, each on the retry of the one before`, async () => {
      const { client, asked } = await modern(async () => ({ action: "accept", content: {} }));
      const [a, b] = [`modern-${kind}-${lang}-once-a`, `modern-${kind}-${lang}-once-b`];
      const r = await client.callTool({ name: `${lang}_at_once`, arguments: { code: atOnce[lang](a, b) } });
      assert.deepEqual(value(r), [true, true], text(r));
      assert.ok(exists(a) && exists(b));
      assert.equal(asked.length, 2);
      assert.deepEqual(asked.map((q) => q.message.includes(a) ? a : q.message.includes(b) ? b : null).sort(), [a, b]);
      await client.close();
    });

    test(`${lang}: two calls at once, the first declined: the other is not asked about after it`, async () => {
      // The second question waits for its turn; once the person declined the first, the run
      // is not asked again (tools.md: at most one refusal per run).
      const { client, asked } = await modern(async () => ({ action: "decline" }));
      const [a, b] = [`modern-${kind}-${lang}-declined-a`, `modern-${kind}-${lang}-declined-b`];
      const r = await client.callTool({ name: `${lang}_at_once`, arguments: { code: atOnceRescued[lang](a, b) } });
      const messages = value(r);
      assert.equal(messages.length, 2, text(r));
      assert.equal(asked.length, 1, JSON.stringify(asked.map((q) => q.message)));
      assert.equal(messages.filter((m) => /^approval declined: .*the person declined it/.test(m)).length, 1, text(r));
      assert.equal(messages.filter((m) => /^approval declined: .*not asked about/.test(m)).length, 1, text(r));
      assert.equal(exists(a) || exists(b), false);
      await client.close();
    });

    test(`${lang}: a 2026-07-28 client without elicitation gets "approval needed"`, async () => {
      const { client } = await modern(null);
      const name = `modern-${kind}-${lang}-unasked`;
      const r = await client.callTool({ name: lang, arguments: { code: code[lang](name) } });
      assert.match(value(r), /^refused: approval needed: .*cannot ask a person/);
      assert.equal(exists(name), false);
      await client.close();
    });
  }

  test("a requestState no run waits under is refused", async () => {
    const { client } = await modern(async () => ({ action: "accept", content: {} }));
    const r = await client.callTool({ name: "ruby", arguments: { code: "1" }, requestState: "cc-approval-00", inputResponses: { approval: { action: "accept" } } }).catch((e) => e);
    assert.ok(r.isError === true || r instanceof Error, JSON.stringify(r));
    await client.close();
  });
});
