// codecell serve driven by the official MCP TypeScript SDK clients, over stdio and over
// Streamable HTTP: the same cases on both transports; the 2025-11-25 era with
// @modelcontextprotocol/sdk, and 2026-07-28 with @modelcontextprotocol/client (below).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from "@modelcontextprotocol/client";
import { StdioClientTransport as ModernStdio } from "@modelcontextprotocol/client/stdio";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { startHttpServer } from "./serve.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = process.env.CODECELL_BIN ?? path.join(here, "..", "..", "build", "codecell");
// The test configuration, plus a read-write folder the cancellation test looks into.
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "codecell-mcp-"));
fs.chmodSync(scratch, 0o777);
const config = path.join(scratch, "cells.json");
const base = JSON.parse(fs.readFileSync(path.join(here, "cells.json"), "utf8"));
base.tools[0].command = ["/bin/cat"];
base.cells[0].mounts = [
  { source: path.join(here, "data"), dest: "/data", description: "a small CSV" },
  { source: scratch, dest: "/out", mode: "rw" },
];
// The memory limit alone: a CPU budget and a wall clock it cannot reach first, however slow
// page faults are on a loaded machine (the ruby cell's 500 ms of CPU is for fuel_exhausted).
base.cells.push({
  name: "memory",
  language: "ruby",
  limits: { timeout_ms: 600000, cpu_ms: 600000, memory_bytes: 134217728 },
  sessions: { enabled: false },
});
fs.writeFileSync(config, JSON.stringify(base));
process.on("exit", () => fs.rmSync(scratch, { recursive: true, force: true }));


function stopped(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.on("exit", (code) => resolve(code));
  });
}

const transports = {
  stdio: async () => {
    const transport = new StdioClientTransport({ command: bin, args: ["serve", "--config", config], stderr: "ignore" });
    return { transport, stop: async () => {} };
  },
  http: async () => {
    const { server, url } = await startHttpServer(bin, config);
    const transport = new StreamableHTTPClientTransport(new URL(url));
    return {
      transport,
      stop: async () => {
        server.kill("SIGTERM");
        assert.equal(await stopped(server), 0, "SIGTERM ends the server with exit code 0");
      },
    };
  },
};

async function connect(make) {
  const { transport, stop } = await make();
  const client = new Client({ name: "codecell-tests", version: "1.0.0" });
  await client.connect(transport);
  return { client, stop };
}

const run = (client, name, args, options) =>
  client.callTool({ name, arguments: args }, undefined, options);

for (const [kind, make] of Object.entries(transports)) {
  describe(`over ${kind}`, () => {
    let client, stop;
    before(async () => ({ client, stop } = await connect(make)));
    after(async () => {
      await client.close();
      await stop();
    });

    test("server info and one tool per cell, with truthful annotations", async () => {
      assert.equal(client.getServerVersion().name, "codecell");
      const { tools } = await client.listTools();
      // One tool per cell, and the companion tool that lists and closes sessions.
      assert.deepEqual(tools.map((t) => t.name), ["ruby", "python", "memory", "sessions"]);
      const [ruby, python, , sessions] = tools;
      assert.deepEqual(sessions.inputSchema.properties.tool.enum, ["ruby"]);
      assert.deepEqual(sessions.inputSchema.required, ["action"]);
      assert.deepEqual(ruby.inputSchema.required, ["code"]);
      assert.ok(ruby.inputSchema.properties.session, "ruby offers sessions");
      assert.equal(python.inputSchema.properties.session, undefined, "sessions disabled for python");
      assert.match(ruby.description, /^Ruby for the MCP tests\./);
      assert.match(ruby.description, /\/data/);
      assert.match(ruby.description, /## Tools/);
      assert.match(ruby.description, /## Sessions/);
      assert.equal(ruby.outputSchema.type, "object");
      // Host tools may reach anything; without them and without rw mounts, nothing on the host.
      assert.equal(ruby.annotations.openWorldHint, true);
      assert.equal(ruby.annotations.readOnlyHint, false, "ruby has a read-write folder");
      assert.equal(python.annotations.readOnlyHint, true);
      assert.equal(python.annotations.openWorldHint, false);
    });

    test("runs Ruby and Python", async () => {
      const r = await run(client, "ruby", { code: "File.read('/data/small.csv').strip + (1+1).to_s" });
      assert.equal(r.isError, false);
      assert.equal(r.structuredContent.status, "ok");
      assert.equal(r.structuredContent.value, "a,b2");
      // The text is what the model acts on; the sandbox's facts are in structuredContent only.
      assert.equal(r.content[0].text, '{"status":"ok","value":"a,b2"}');
      assert.ok(r.structuredContent.sandbox.includes("seccomp"));
      assert.equal(typeof r.structuredContent.duration_ms, "number");
      const p = await run(client, "python", { code: "print('hi')\nsum(range(10))" });
      assert.equal(p.structuredContent.value, 45);
      assert.equal(p.structuredContent.stdout, "hi\n");
    });

    test("files are in /work before the code; a bad entry is a tool error naming it", async () => {
      const files = [
        { name: "in/sales.csv", text: "city,n\nZürich,3\n" },
        { name: "blob.bin", base64: Buffer.from([0, 255, 10, 0]).toString("base64") },
      ];
      const r = await run(client, "ruby", { code: "[File.read('in/sales.csv'), File.binread('blob.bin').bytes]", files });
      assert.equal(r.isError, false);
      assert.deepEqual(r.structuredContent.value, ["city,n\nZürich,3\n", [0, 255, 10, 0]]);
      const p = await run(client, "python", { code: "open('in/sales.csv').read().splitlines()[1]", files });
      assert.equal(p.structuredContent.value, "Zürich,3");
      const bad = await run(client, "python", { code: "1", files: [{ name: "../etc/passwd", text: "x" }] });
      assert.equal(bad.isError, true);
      assert.match(bad.content[0].text, /files\[0\]\.name: "\.\.\/etc\/passwd" has a "\." or "\.\." part/);
    });

    test("a matplotlib figure comes back as image content", async () => {
      const r = await run(client, "python", {
        code: "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\n'ok'",
      });
      assert.equal(r.isError, false, r.content[0].text);
      const image = r.content.find((c) => c.type === "image");
      assert.equal(image.mimeType, "image/png");
      const png = Buffer.from(image.data, "base64");
      assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
      assert.equal(png.readUInt32BE(16), 640); // IHDR width
      assert.equal(r.structuredContent.images[0].bytes, png.length);
    });

    test("a long output keeps its end for the model", async () => {
      const r = await run(client, "python", {
        code: "for i in range(200000): print('line', i)\nraise ValueError('the end')",
      });
      assert.equal(r.isError, true);
      assert.ok(r.content[0].text.length <= 20000, `${r.content[0].text.length} characters`);
      const lean = JSON.parse(r.content[0].text);
      assert.equal(lean.error.message, "the end");
      assert.ok(lean.stdout.endsWith("line 199999\n"));
      assert.match(lean.stdout, /\n\[… [\d,]+ lines, [\d.]+ MB omitted …\]\n/);
    });

    test("every status, each an isError result the model can read", async () => {
      // Each case on a cell where only its own limit can be reached.
      const cases = [
        ["error", "raise ArgumentError, 'bad'"],
        // A wall clock far above the CPU budget: on a loaded machine, loop {} still spends its
        // 500 ms of CPU before 12 s have passed.
        ["timeout", "sleep 60"],
        ["fuel_exhausted", "loop { }"],
        ["memory_limit", "'x' * (512 * 1024 * 1024)", "memory"],
        ["sandbox_error", "Process.kill(:KILL, Process.pid)"],
      ];
      for (const [status, code, cell = "ruby"] of cases) {
        const r = await run(client, cell, { code });
        assert.equal(r.structuredContent.status, status, `${code}: ${r.content[0].text}`);
        assert.equal(r.isError, true);
      }
      const e = await run(client, "ruby", { code: "raise ArgumentError, 'bad'" });
      assert.equal(e.structuredContent.error.class, "ArgumentError");
    });

    test("host tools through SB.call", async () => {
      const r = await run(client, "ruby", { code: "SB.call('echo', text: 'hey')" });
      assert.deepEqual(r.structuredContent.value, { text: "hey" });
    });

    test("a session keeps state across calls; reset starts it over; each result says which", async () => {
      const first = await run(client, "ruby", { code: "x = 41", session: "s1" });
      assert.deepEqual(first.structuredContent.session, { id: "s1", created: true });
      assert.match(first.content.at(-1).text, /created by this call/);
      const r = await run(client, "ruby", { code: "x + 1", session: "s1" });
      assert.equal(r.structuredContent.value, 42);
      assert.deepEqual(r.structuredContent.session, { id: "s1", created: false });
      const fresh = await run(client, "ruby", { code: "defined?(x).inspect", session: "s1", reset: true });
      assert.equal(fresh.structuredContent.value, "nil");
      assert.equal(fresh.structuredContent.session.created, true);
    });

    test("the sessions tool lists and closes the client's sessions", async () => {
      await run(client, "ruby", { code: "y = 1", session: "listed" });
      const list = await run(client, "sessions", { action: "list" });
      assert.equal(list.isError, false);
      assert.ok(list.structuredContent.sessions.some((s) => s.tool === "ruby" && s.session === "listed"));
      const closed = await run(client, "sessions", { action: "close", session: "listed" });
      assert.deepEqual(closed.structuredContent.closed, [{ tool: "ruby", session: "listed" }]);
      const again = await run(client, "ruby", { code: "defined?(y).inspect", session: "listed" });
      assert.equal(again.structuredContent.value, "nil");
      assert.equal(again.structuredContent.session.created, true);
    });

    test("sessions are scoped to the client: another client's name reaches nothing", async () => {
      await run(client, "ruby", { code: "secret = 7", session: "shared" });
      const other = await connect(make);
      try {
        const r = await run(other.client, "ruby", { code: "defined?(secret).inspect", session: "shared" });
        assert.equal(r.structuredContent.value, "nil");
      } finally {
        await other.client.close();
        await other.stop();
      }
      const mine = await run(client, "ruby", { code: "secret", session: "shared" });
      assert.equal(mine.structuredContent.value, 7);
    });

    test("an unknown tool is a protocol error; bad arguments are tool errors the model reads (SEP-1303)", async () => {
      await assert.rejects(run(client, "nope", { code: "1" }), (e) => e.code === -32602 && /unknown tool/.test(e.message));
      const cases = [
        ["ruby", {}, /Missing argument "code"/],
        ["ruby", { code: "" }, /"code" must be a non-empty string/],
        ["python", { code: "1", session: "x" }, /Unknown argument "session".*no sessions/],
        ["ruby", { code: "1", reset: true }, /"reset": true needs "session"/],
        ["ruby", { code: "1", session: "a b" }, /"session" must be a name/],
        ["sessions", { action: "drop" }, /"action": "list"/],
      ];
      for (const [name, args, text] of cases) {
        const r = await run(client, name, args);
        assert.equal(r.isError, true, JSON.stringify(r));
        assert.match(r.content[0].text, text);
      }
    });

    test("cancellation kills the run it names", async () => {
      const late = path.join(scratch, `late-${kind}`);
      const abort = new AbortController();
      const pending = run(client, "ruby", { code: `sleep 1.5; File.write('/out/late-${kind}', 'ran')` }, { signal: abort.signal });
      setTimeout(() => abort.abort("changed my mind"), 300);
      await assert.rejects(pending);
      // Past the moment the code would have written the file (its timeout is 12 s): the run is
      // gone, so nothing was written.
      await new Promise((resolve) => setTimeout(resolve, 2500));
      assert.equal(fs.existsSync(late), false, "the cancelled run went on");
      const next = await run(client, "ruby", { code: "1 + 1" });
      assert.equal(next.structuredContent.value, 2);
    });

    test("cancelling a session eval ends the session", async () => {
      await run(client, "ruby", { code: "x = 1", session: "c" });
      const abort = new AbortController();
      const pending = run(client, "ruby", { code: "sleep 30", session: "c" }, { signal: abort.signal });
      setTimeout(() => abort.abort("changed my mind"), 300);
      await assert.rejects(pending);
      // The eval was killed with its kernel: the session's state is gone.
      const r = await run(client, "ruby", { code: "defined?(x).inspect", session: "c" });
      assert.equal(r.structuredContent.value, "nil");
    });

    test("progress notifications carry the elapsed time and the last line of output", async () => {
      const seen = [];
      const r = await run(
        client,
        "ruby",
        // Each line stays the last one for over two reports (one a second), so a late report on
        // a busy machine still sees it.
        { code: "puts 'step one'; sleep 2.2; puts 'step two'; sleep 2.2; :done" },
        { onprogress: (p) => seen.push(p) },
      );
      assert.equal(r.structuredContent.value, "done");
      assert.ok(seen.length >= 2, `progress: ${JSON.stringify(seen)}`);
      assert.ok(seen.every((p, i) => i === 0 || p.progress > seen[i - 1].progress));
      assert.ok(seen.some((p) => p.message === "step one"), JSON.stringify(seen));
      assert.ok(seen.some((p) => p.message === "step two"), JSON.stringify(seen));
    });

    test("concurrent calls each get their own answer", async () => {
      const n = 6;
      const results = await Promise.all(
        Array.from({ length: n }, (_, i) => run(client, i % 2 ? "ruby" : "python", { code: `${i} * 10` })),
      );
      results.forEach((r, i) => assert.equal(r.structuredContent.value, i * 10));
    });

    test("ping", async () => {
      assert.deepEqual(await client.ping(), {});
    });
  });
}

// The 2026-07-28 era through the SDK that speaks it (@modelcontextprotocol/client), pinned to
// that revision: server/discover at connect, then stateless requests; sessions are handles.
const modern = {
  stdio: async () => ({
    transport: new ModernStdio({ command: bin, args: ["serve", "--config", config], stderr: "ignore" }),
    stop: async () => {},
  }),
  http: async () => {
    const { server, url } = await startHttpServer(bin, config);
    return {
      transport: new ModernHttp(new URL(url)),
      stop: async () => {
        server.kill("SIGTERM");
        assert.equal(await stopped(server), 0, "SIGTERM ends the server with exit code 0");
      },
    };
  },
};

for (const [kind, make] of Object.entries(modern)) {
  describe(`2026-07-28 over ${kind}`, () => {
    let client, stop;
    before(async () => {
      const made = await make();
      stop = made.stop;
      client = new ModernClient(
        { name: "codecell-tests", version: "1.0.0" },
        { versionNegotiation: { mode: { pin: "2026-07-28" } } },
      );
      await client.connect(made.transport);
    });
    after(async () => {
      await client.close();
      await stop();
    });
    const call = (name, args) => client.callTool({ name, arguments: args });

    test("discovered without initialize; the same tools", async () => {
      assert.equal(client.getServerVersion()?.name, "codecell");
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ["ruby", "python", "memory", "sessions"]);
      assert.equal(tools[0].inputSchema.properties.session.pattern, "^(new|cs_[0-9a-f]{32})$");
    });

    test("a handle carries a session; the sessions tool lists and closes it; then it has expired", async () => {
      const made = await call("ruby", { code: "x = 41", session: "new" });
      assert.equal(made.isError, false);
      const handle = made.structuredContent.session.id;
      assert.match(handle, /^cs_[0-9a-f]{32}$/);
      assert.equal(made.structuredContent.session.created, true);
      const used = await call("ruby", { code: "x + 1", session: handle });
      assert.equal(used.structuredContent.value, 42);
      assert.equal(used.structuredContent.session.created, false);
      const list = await call("sessions", { action: "list" });
      if (kind === "http") {
        // Without bearer tokens every HTTP client is one context: no handle is ever listed.
        assert.equal(list.isError, true);
        assert.ok(!JSON.stringify(list).includes(handle));
      } else {
        assert.ok(list.structuredContent.sessions.some((s) => s.session === handle));
      }
      const closed = await call("sessions", { action: "close", session: handle });
      assert.deepEqual(closed.structuredContent.closed, [{ tool: "ruby", session: handle }]);
      const expired = await call("ruby", { code: "x", session: handle });
      assert.equal(expired.isError, true);
      assert.match(expired.content[0].text, /has expired/);
    });

    test("bad arguments are tool errors; an unknown tool is a protocol error", async () => {
      for (const [args, text] of [
        [{}, /Missing argument "code"/],
        [{ code: "1", session: "mine" }, /"session" must be "new"/],
        [{ code: "1", session: `cs_${"0".repeat(32)}` }, /not one this server gave you/],
      ]) {
        const r = await call("ruby", args);
        assert.equal(r.isError, true);
        assert.match(r.content[0].text, text);
      }
      await assert.rejects(call("nope", { code: "1" }), (e) => e.code === -32602);
    });

    test("files reach the code; a bad entry is a tool error naming it", async () => {
      const r = await call("python", { code: "open('a/b.txt').read()", files: [{ name: "a/b.txt", text: "héllo" }] });
      assert.equal(r.isError, false);
      assert.equal(r.structuredContent.value, "héllo");
      const bad = await call("ruby", { code: "1", files: [{ name: "/abs", text: "x" }] });
      assert.equal(bad.isError, true);
      assert.match(bad.content[0].text, /files\[0\]\.name: "\/abs" is absolute/);
    });
  });
}
