// Three `codecell serve --http --instance a|b|c` behind nginx (the shipped
// packaging/nginx/codecell.conf, on a temporary configuration; cluster.mjs), all on 127.0.0.1,
// driven through the proxy by the official SDK clients (2026-07-28 and 2025-11-25) and the
// Inspector CLI in the 2026-07-28 era (docs/scaling.md):
//   - 300 one-shot calls, each checked for its own value, served by all three instances (by
//     each instance's /metrics); progress notifications streamed through while a call runs;
//   - code sessions that keep their state across 20 calls each, from several clients at once;
//   - one instance SIGKILLed with a call in flight: its sessions answer that they were lost,
//     the others are untouched, new sessions work;
//   - one instance drained with SIGTERM while calls are in flight: none is lost.
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyHttp } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { findNginx, metric, startCluster, until } from "./cluster.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = process.env.CODECELL_BIN ?? path.join(here, "..", "..", "build", "codecell");
const inspector = path.join(here, "node_modules", "@modelcontextprotocol", "inspector", "clients",
  "launcher", "build", "index.js");

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "codecell-scale-"));
const gate = path.join(scratch, "gate");
fs.mkdirSync(gate);
fs.chmodSync(gate, 0o777);
const config = path.join(scratch, "cells.json");
fs.writeFileSync(config, JSON.stringify({
  cells: [{
    name: "ruby", language: "ruby", pool: 2,
    // Generous: the machine running the suite may be loaded.
    limits: { timeout_ms: 60000, cpu_ms: 30000 },
    sessions: { max: 16, idle_ms: 600000 },
    mounts: [{ source: gate, dest: "/gate", mode: "rw", description: "test gates" }],
  }],
}));
process.on("exit", () => fs.rmSync(scratch, { recursive: true, force: true }));

// Ruby that waits until the test creates /gate/NAME, then answers value.
const gated = (name, value) => `until File.exist?("/gate/${name}"); sleep 0.05; end; ${value}`;
const openGate = (name) => fs.writeFileSync(path.join(gate, name), "");
// A session's counter: 1 on the call that creates it, one more on each call.
const COUNT = "x = (x || 0) + 1";

async function modernClient(url) {
  const client = new Client({ name: "scale-out", version: "1.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  await client.listTools(); // the tools' x-mcp-header says which arguments to mirror
  return client;
}

async function legacyClient(url) {
  const transport = new LegacyHttp(new URL(url));
  const client = new LegacyClient({ name: "scale-out-legacy", version: "1.0.0" });
  await client.connect(transport);
  return { client, sessionId: () => transport.sessionId };
}

// Runs jobs (functions returning promises) at most `width` at a time, in order of index.
async function pool(jobs, width) {
  const results = new Array(jobs.length);
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < jobs.length) {
      const i = next++;
      results[i] = await jobs[i]();
    }
  }));
  return results;
}

const instanceOf = (handle) => handle.match(/^cs_([a-z0-9-]+)\./)?.[1];
const value = (r) => {
  assert.equal(r.isError, false, JSON.stringify(r.content));
  return r.structuredContent.value;
};
const runsOk = async (cluster, name) => metric(await cluster.metrics(name), "codecell_runs_total", 'status="ok"');
const refused = async (cluster, name) => {
  try {
    await cluster.healthz(name);
    return false;
  } catch {
    return true; // a draining (or dead) instance takes no new connection
  }
};

const skip = findNginx() ? false : "nginx is not installed (scripts/bootstrap installs it)";

describe("scale out: three instances behind nginx", { skip }, () => {
  let cluster;
  let clients = [];
  before(async () => {
    cluster = await startCluster(bin, config, 3);
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
    if (cluster) await cluster.stop();
  });

  test("300 one-shot calls, each its own value, served by all three instances", async () => {
    const before = Object.fromEntries(await Promise.all(["a", "b", "c"].map(async (n) => [n, await runsOk(cluster, n)])));
    const mine = await Promise.all([0, 1, 2, 3].map(() => modernClient(cluster.url)));
    clients.push(...mine);
    const jobs = Array.from({ length: 300 }, (_, i) => async () =>
      value(await mine[i % mine.length].callTool({ name: "ruby", arguments: { code: `${i} * 7 + 3` } })));
    const values = await pool(jobs, 8);
    values.forEach((v, i) => assert.equal(v, i * 7 + 3, `call ${i}`));
    let total = 0;
    for (const n of ["a", "b", "c"]) {
      const served = (await runsOk(cluster, n)) - before[n];
      assert.ok(served > 0, `instance ${n} served none of the 300 calls`);
      total += served;
    }
    assert.equal(total, 300);
  });

  test("the Inspector CLI (2026-07-28) lists through the proxy and keeps a session by its handle", () => {
    const home = path.join(scratch, "inspector");
    fs.mkdirSync(home, { recursive: true });
    const inspect = (...args) => {
      const r = spawnSync(process.execPath, [inspector, "--cli", "--format", "json", "--protocol-era", "modern",
        ...args, "--server-url", cluster.url], {
        encoding: "utf8", timeout: 120000,
        env: { ...process.env, HOME: home, MCP_CATALOG_PATH: path.join(home, "mcp.json") },
      });
      assert.equal(r.status, 0, `${r.stdout} ${r.stderr}`);
      return { json: JSON.parse(r.stdout), stderr: r.stderr };
    };
    const list = inspect("--method", "tools/list", "--strict");
    assert.doesNotMatch(list.stderr, /^(Warning|Error): tool/m, list.stderr);
    assert.equal(list.json.result.tools[0].inputSchema.properties.session["x-mcp-header"], "Session");
    const call = (args) => inspect("--method", "tools/call", "--tool-name", "ruby", "--tool-args-json",
      JSON.stringify(args)).json.result;
    const made = call({ code: "y = 20", session: "new" });
    const handle = made.structuredContent.session.id;
    assert.match(handle, /^cs_[abc]\.[0-9a-f]{32}$/);
    // Each Inspector run is a new process and connection: only the handle, mirrored into
    // Mcp-Param-Session, brings the next call to the instance that holds the session.
    for (let i = 1; i <= 3; i++) assert.equal(call({ code: "y += 1", session: handle }).structuredContent.value, 20 + i);
  });

  test("progress streams through the proxy while the call runs", async () => {
    const client = await modernClient(cluster.url);
    clients.push(client);
    // The call can end only once the test has seen its progress: nginx must pass the event
    // stream on as it comes, not hold it until the answer.
    const seen = [];
    const r = await client.callTool(
      { name: "ruby", arguments: { code: `puts "waiting"; ${gated("progress", 7)}` } },
      { onprogress: (p) => { seen.push(p.message); if (p.message === "waiting") openGate("progress"); } },
    );
    assert.equal(value(r), 7);
    assert.ok(seen.includes("waiting"), JSON.stringify(seen));
  });

  // Sessions shared by the tests below: modern ones by handle, legacy ones by MCP session.
  const sessions = [];
  const legacy = [];

  test("code sessions keep their state across 20 calls each, from several clients at once", async () => {
    const mine = await Promise.all([0, 1, 2, 3, 4, 5].map(() => modernClient(cluster.url)));
    clients.push(...mine);
    // Sessions start where the pool puts them; more until they live on at least two instances.
    const start = async (client) => {
      const r = await client.callTool({ name: "ruby", arguments: { code: COUNT, session: "new" } });
      assert.equal(value(r), 1);
      return { client, handle: r.structuredContent.session.id, count: 1 };
    };
    sessions.push(...await Promise.all(mine.map(start)));
    for (let i = 0; new Set(sessions.map((s) => instanceOf(s.handle))).size < 2; i++) {
      assert.ok(i < 30, "every session landed on one instance");
      sessions.push(await start(mine[i % mine.length]));
    }
    for (let i = 0; i < 2; i++) {
      const { client, sessionId } = await legacyClient(cluster.url);
      clients.push(client);
      legacy.push({ client, sessionId, count: 0 });
    }
    const legacyCall = async (l) => {
      const r = await l.client.callTool({ name: "ruby", arguments: { code: COUNT, session: "s" } });
      assert.equal(r.structuredContent.value, ++l.count);
    };
    await Promise.all([
      ...sessions.map(async (s) => {
        while (s.count < 20) {
          const r = await s.client.callTool({ name: "ruby", arguments: { code: COUNT, session: s.handle } });
          assert.equal(value(r), ++s.count, s.handle);
          assert.equal(r.structuredContent.session.created, false);
        }
      }),
      ...legacy.map(async (l) => {
        while (l.count < 20) await legacyCall(l);
      }),
    ]);
    for (const l of legacy) assert.match(l.sessionId(), /^[abc]\.[0-9a-f]{32}$/);
  });

  let victim;

  test("one instance SIGKILLed with a call in flight: its sessions were lost, the others are untouched", async () => {
    victim = instanceOf(sessions[0].handle);
    // A 2025-11-25 client whose MCP session lives on the victim, too.
    for (let i = 0; !legacy.some((l) => l.sessionId().startsWith(`${victim}.`)); i++) {
      assert.ok(i < 30, `no MCP session landed on instance ${victim}`);
      const { client, sessionId } = await legacyClient(cluster.url);
      clients.push(client);
      const l = { client, sessionId, count: 0 };
      const r = await client.callTool({ name: "ruby", arguments: { code: COUNT, session: "s" } });
      assert.equal(r.structuredContent.value, ++l.count);
      legacy.push(l);
    }
    // A call in flight on the victim when it dies: the proxy passes it to a survivor, which
    // says the session was lost (never a hang, never another client's session).
    const s0 = sessions[0];
    const inFlight = s0.client.callTool({ name: "ruby", arguments: { code: gated("never", "x"), session: s0.handle } });
    await until(async () => metric(await cluster.metrics(victim), "codecell_runs_in_progress") >= 1, "the call to run");
    cluster.instances[victim].child.kill("SIGKILL");
    await cluster.instances[victim].exit;
    const lost = await inFlight;
    assert.equal(lost.isError, true);
    assert.match(lost.content[0].text, new RegExp(`Session ${s0.handle} was lost: it lived on the codecell instance "${victim}"`));

    await Promise.all([
      ...sessions.map(async (s) => {
        const r = await s.client.callTool({ name: "ruby", arguments: { code: COUNT, session: s.handle } });
        if (instanceOf(s.handle) === victim) {
          assert.equal(r.isError, true);
          assert.match(r.content[0].text, /was lost/);
        } else {
          assert.equal(value(r), ++s.count, `${s.handle} lost its state`);
        }
      }),
      ...legacy.map(async (l) => {
        const call = l.client.callTool({ name: "ruby", arguments: { code: COUNT, session: "s" } });
        if (l.sessionId().startsWith(`${victim}.`)) {
          await assert.rejects(call, /MCP session lost: it lived on the codecell instance/);
        } else {
          assert.equal((await call).structuredContent.value, ++l.count);
        }
      }),
    ]);
    // New sessions go to the survivors, and work.
    const fresh = await Promise.all([0, 1, 2].map(async (i) => {
      const client = sessions[i].client;
      const r = await client.callTool({ name: "ruby", arguments: { code: COUNT, session: "new" } });
      assert.equal(value(r), 1);
      const handle = r.structuredContent.session.id;
      assert.notEqual(instanceOf(handle), victim);
      const again = await client.callTool({ name: "ruby", arguments: { code: COUNT, session: handle } });
      assert.equal(value(again), 2);
      return handle;
    }));
    assert.equal(fresh.length, 3);
    const { client } = await legacyClient(cluster.url);
    clients.push(client);
    const r = await client.callTool({ name: "ruby", arguments: { code: COUNT, session: "s" } });
    assert.equal(r.structuredContent.value, 1);
  });

  test("one instance drained with SIGTERM while calls are in flight: none is lost", async () => {
    const survivors = ["a", "b", "c"].filter((n) => n !== victim);
    const mine = await Promise.all([0, 1].map(() => modernClient(cluster.url)));
    clients.push(...mine);
    // Calls that run until the test opens their gate: some on each survivor.
    const held = Array.from({ length: 6 }, (_, i) =>
      mine[i % 2].callTool({ name: "ruby", arguments: { code: gated("drain", 1000 + i) } }));
    let drained;
    await until(async () => {
      for (const n of survivors)
        if (metric(await cluster.metrics(n), "codecell_runs_in_progress") >= 1) drained = n;
      return drained;
    }, "a held call to run");
    const before = await runsOk(cluster, survivors.find((n) => n !== drained));
    cluster.instances[drained].child.kill("SIGTERM");
    await until(() => refused(cluster, drained), "the drain to begin");
    assert.equal(cluster.instances[drained].child.exitCode, null, "it stopped with calls in flight");
    // Meanwhile new work goes to the other instance, through the proxy, and none fails.
    const jobs = Array.from({ length: 40 }, (_, i) => async () =>
      value(await mine[i % 2].callTool({ name: "ruby", arguments: { code: `${i} + 500` } })));
    (await pool(jobs, 6)).forEach((v, i) => assert.equal(v, i + 500));
    assert.ok((await runsOk(cluster, survivors.find((n) => n !== drained))) - before >= 40);
    openGate("drain");
    (await Promise.all(held)).forEach((r, i) => assert.equal(value(r), 1000 + i));
    assert.equal(await cluster.instances[drained].exit, 0);
    assert.match(cluster.instances[drained].stderr, /"event":"drain"/);
    // The last instance still serves.
    assert.equal(value(await mine[0].callTool({ name: "ruby", arguments: { code: "6 * 7" } })), 42);
  });
});
