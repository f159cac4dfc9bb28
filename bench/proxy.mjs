// bench/proxy: what nginx in front of codecell serve costs, and what several instances give
// (docs/scaling.md). Instances and nginx run as the scale_out test runs them (the shipped
// packaging/nginx/codecell.conf on a temporary configuration, tests/mcp/cluster.mjs).
//
//   1. The proxy hop: 2026-07-28 tools/call round trips of Ruby `1+1`, one at a time on a
//      kept-alive connection (paced, so each is a pool hit), straight to one instance and
//      through nginx to that instance, alternating call by call in the same run; the medians
//      and the median of the pairs' differences.
//   2. Throughput: one-shot runs per second from --callers callers at once, straight to one
//      instance, then through nginx to one, two and three instances; with nginx's CPU time per
//      call beside it (this machine is CPU-bound: the figure to watch is that nginx stays a
//      small part of it).
//
//   bench/proxy [--calls N] [--runs N] [--callers N]
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const { startCluster, findNginx } = await import(path.join(root, "tests", "mcp", "cluster.mjs"));

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const calls = arg("--calls", 400);
const runs = arg("--runs", 600);
const callers = arg("--callers", 8);
const bin = process.env.CODECELL_BIN ?? path.join(root, "build", "codecell");
if (!findNginx()) {
  console.log("bench/proxy: skipped: nginx is not installed (scripts/bootstrap installs it)");
  process.exit(0);
}

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "codecell-bench-proxy-"));
process.on("exit", () => fs.rmSync(scratch, { recursive: true, force: true }));
const config = path.join(scratch, "cells.json");
fs.writeFileSync(config, JSON.stringify({
  cells: [{ name: "ruby", language: "ruby", pool: 4, limits: { timeout_ms: 30000, cpu_ms: 10000 } }],
}));

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const now = () => Number(process.hrtime.bigint()) / 1e6;

// One 2026-07-28 tools/call, raw (the headers a client sends), on the agent's kept-alive
// connections; resolves with the value.
let nextId = 1;
function call(url, agent, code) {
  const body = JSON.stringify({
    jsonrpc: "2.0", id: nextId++, method: "tools/call",
    params: {
      _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} },
      name: "ruby", arguments: { code },
    },
  });
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: "POST", agent,
      headers: {
        "Content-Type": "application/json", Accept: "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "ruby",
        "Content-Length": Buffer.byteLength(body),
      },
    }, (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => {
        const value = JSON.parse(text).result?.structuredContent?.value;
        if (res.statusCode !== 200 || value === undefined) reject(new Error(`${res.statusCode} ${text}`));
        else resolve(value);
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

// Calls paced PACE_MS apart, so that each is a pool hit (the pool refills in between) and the
// two paths compare the same work.
const PACE_MS = 25;
async function roundTrips(url, agent, n) {
  const times = [];
  for (let i = 0; i < n; i++) {
    await new Promise((r) => setTimeout(r, PACE_MS));
    const t0 = now();
    await call(url, agent, "1+1");
    times.push(now() - t0);
  }
  return times;
}

// CPU time (ms) of nginx's master and workers so far.
function nginxCpuMs(pid) {
  let total = 0;
  for (const p of [pid, ...childrenOf(pid)]) {
    try {
      const f = fs.readFileSync(`/proc/${p}/stat`, "utf8").split(") ")[1].split(" ");
      total += (Number(f[11]) + Number(f[12])) * 1000 / 100; // utime, stime in ticks (USER_HZ 100)
    } catch {}
  }
  return total;
}
function childrenOf(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

async function throughput(url, n, width) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: width });
  let next = 0;
  const t0 = now();
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) {
      const i = next++;
      if ((await call(url, agent, `${i} + 1`)) !== i + 1) throw new Error(`wrong value for ${i}`);
    }
  }));
  const seconds = (now() - t0) / 1000;
  agent.destroy();
  return n / seconds;
}

// 1. The hop.
{
  const cluster = await startCluster(bin, config, 1, { workers: 1, instanceFlags: ["--log-level", "warning"] });
  try {
    const direct = `${cluster.instances.a.base}/mcp`;
    const agents = [new http.Agent({ keepAlive: true, maxSockets: 1 }), new http.Agent({ keepAlive: true, maxSockets: 1 })];
    await roundTrips(direct, agents[0], 50); // warm both paths
    await roundTrips(cluster.url, agents[1], 50);
    // Interleaved one by one, so that both paths see the same machine: the added time is the
    // median of the differences of each pair, beside the two medians.
    const straight = [], proxied = [], added = [];
    for (let i = 0; i < calls; i++) {
      const [a] = await roundTrips(direct, agents[0], 1);
      const [b] = await roundTrips(cluster.url, agents[1], 1);
      straight.push(a);
      proxied.push(b);
      added.push(b - a);
    }
    agents.forEach((a) => a.destroy());
    console.log(`tools/call round trip, Ruby 1+1 (pool hits), one at a time, ${calls} pairs (medians):`);
    console.log(`  straight to one instance   ${median(straight).toFixed(3)} ms`);
    console.log(`  through nginx              ${median(proxied).toFixed(3)} ms`);
    console.log(`  added by the proxy hop     ${median(added).toFixed(3)} ms (median of the pairs' differences)`);
  } finally {
    await cluster.stop();
  }
}

// 2. Runs per second.
console.log(`one-shot runs per second, ${runs} runs of Ruby from ${callers} callers (${os.cpus().length} CPUs here):`);
let single;
for (const n of [1, 2, 3]) {
  const cluster = await startCluster(bin, config, n, { workers: 1, instanceFlags: ["--log-level", "warning"] });
  try {
    await throughput(cluster.url, 30, callers); // warm
    if (n === 1) {
      single = await throughput(`${cluster.instances.a.base}/mcp`, runs, callers);
      console.log(`  straight to one instance        ${single.toFixed(0)} runs/s`);
    }
    const cpu0 = nginxCpuMs(cluster.nginxPid);
    const rate = await throughput(cluster.url, runs, callers);
    const cpu = nginxCpuMs(cluster.nginxPid) - cpu0;
    console.log(`  through nginx to ${n} instance${n > 1 ? "s" : " "}    ${rate.toFixed(0)} runs/s` +
      `  (${(rate / single).toFixed(2)}x straight; nginx CPU ${(cpu * 1000 / runs).toFixed(0)} µs per run)`);
  } finally {
    await cluster.stop();
  }
}
