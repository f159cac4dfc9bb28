// bench/codemode: code mode against tool calling, on a real MCP server (server-memory).
//
// One task of 20 dependent steps (create entities, relate them, add observations, query) done
//   (a) as one code run: the official SDK client calls codecell serve once; the guest's script
//       makes the 20 calls to server-memory through codecell;
//   (b) as 20 tools/call round trips from the same client straight to server-memory,
// printing the wall time (median), the model turns each needs, and the bytes of tool output
// that would enter the model's context. Then the cost codecell adds to one upstream call made
// from the guest, against the same call made directly by a client, over stdio. Then 10
// independent calls to a tool that takes 50 ms, in one script: serial (tool_concurrency 1)
// against concurrent (SB.parallel, asyncio.gather), in the same run, beside one call's latency.
//
//   bench/codemode [--reps N] [--calls N]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const modules = path.join(root, "tests", "mcp", "node_modules");
const sdk = (p) => import(path.join(modules, "@modelcontextprotocol", "sdk", "dist", "esm", p));
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const reps = arg("--reps", 15);
const calls = arg("--calls", 300);
const bin = process.env.CODECELL_BIN ?? path.join(root, "build", "codecell");
const node = process.execPath;
const memoryJs = path.join(modules, "@modelcontextprotocol", "server-memory", "dist", "index.js");
const everythingJs = path.join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js");
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "codecell-codemode-"));
process.on("exit", () => fs.rmSync(scratch, { recursive: true, force: true }));

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = () => Number(process.hrtime.bigint()) / 1e6;

async function connect(command, args, env) {
  const client = new Client({ name: "bench-codemode", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command, args, env: { ...process.env, ...env }, stderr: "ignore" }));
  return client;
}

// The 20 steps, for run r: the arguments of each call, in order. Later steps name what earlier
// ones created.
function steps(r) {
  const p = (i) => `r${r}-person-${i}`;
  const out = [];
  for (let i = 0; i < 8; i++)
    out.push(["create_entities", { entities: [{ name: p(i), entityType: "person", observations: [`joined in step ${i}`] }] }]);
  for (let i = 0; i < 7; i++)
    out.push(["create_relations", { relations: [{ from: p(i), to: p(i + 1), relationType: "knows" }] }]);
  for (let i = 0; i < 3; i++)
    out.push(["add_observations", { observations: [{ entityName: p(i), contents: [`met ${p(i + 1)}`] }] }]);
  out.push(["search_nodes", { query: `r${r}-person` }]);
  out.push(["open_nodes", { names: [p(0), p(7)] }]);
  return out;
}

// The same steps as the model would write them in one Ruby script: only the answer it needs
// (who knows whom, how many observations) comes back.
function script(r) {
  return `p = ->(i) { "r${r}-person-#{i}" }
8.times { |i| Memory.create_entities(entities: [{ name: p[i], entityType: "person", observations: ["joined in step #{i}"] }]) }
7.times { |i| Memory.create_relations(relations: [{ from: p[i], to: p[i + 1], relationType: "knows" }]) }
3.times { |i| Memory.add_observations(observations: [{ entityName: p[i], contents: ["met #{p[i + 1]}"] }]) }
found = Memory.search_nodes(query: "r${r}-person")
ends = Memory.open_nodes(names: [p[0], p[7]])
{ people: found["entities"].size, links: found["relations"].size,
  observations: ends["entities"].sum { |e| e["observations"].size } }`;
}

const contextBytes = (result) => result.content.reduce((n, c) => n + Buffer.byteLength(c.type === "text" ? c.text : JSON.stringify(c)), 0);

// (a) code mode
const config = path.join(scratch, "cells.json");
fs.writeFileSync(config, JSON.stringify({
  mcp_servers: {
    memory: { command: [node, memoryJs], env: { MEMORY_FILE_PATH: path.join(scratch, "a.jsonl") } },
    everything: { command: [node, everythingJs, "stdio"] },
  },
  cells: [{ name: "ruby", language: "ruby", pool: 2, tools: ["memory.*", "everything.echo"],
            limits: { timeout_ms: 60000, cpu_ms: 60000, tool_calls: 100000 } }],
}));
const serve = await connect(bin, ["serve", "--config", config]);
const direct = await connect(node, [memoryJs], { MEMORY_FILE_PATH: path.join(scratch, "b.jsonl") });

const codeTimes = [], directTimes = [];
let codeBytes = 0, directBytes = 0;
for (let r = 0; r < reps; r++) {
  let t = ms();
  const res = await serve.callTool({ name: "ruby", arguments: { code: script(r) } });
  codeTimes.push(ms() - t);
  if (res.structuredContent?.status !== "ok") throw new Error(JSON.stringify(res.structuredContent));
  codeBytes = contextBytes(res);

  t = ms();
  let bytes = 0;
  for (const [name, args] of steps(r)) bytes += contextBytes(await direct.callTool({ name, arguments: args }));
  directTimes.push(ms() - t);
  directBytes = bytes;
}

console.log(`codemode: 20 dependent steps on server-memory, median of ${reps} runs`);
console.log(`${"".padEnd(34)} ${"wall ms".padStart(9)} ${"model turns".padStart(12)} ${"context bytes".padStart(14)}`);
console.log(`${"(a) one code run through codecell".padEnd(34)} ${median(codeTimes).toFixed(1).padStart(9)} ${"1".padStart(12)} ${String(codeBytes).padStart(14)}`);
console.log(`${"(b) 20 tools/call, direct".padEnd(34)} ${median(directTimes).toFixed(1).padStart(9)} ${"20".padStart(12)} ${String(directBytes).padStart(14)}`);
console.log(`context bytes (a)/(b): ${(codeBytes / directBytes).toFixed(3)}  (every turn of (b) also resends the conversation)`);

// The cost codecell adds to one upstream call: server-everything's echo over stdio, timed in
// the guest around each Everything.echo, against the SDK client's own callTool.
const inGuest = await serve.callTool({ name: "ruby", arguments: { code: `
t = Array.new(${calls}) do
  a = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
  Everything.echo(message: "x")
  Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond) - a
end.sort
t[t.size / 2] / 1e6` } });
if (inGuest.structuredContent?.status !== "ok") throw new Error(JSON.stringify(inGuest.structuredContent));
const everything = await connect(node, [everythingJs, "stdio"]);
const directEcho = [];
for (let i = 0; i < calls; i++) {
  const t = ms();
  await everything.callTool({ name: "echo", arguments: { message: "x" } });
  directEcho.push(ms() - t);
}
const guestMs = inGuest.structuredContent.value, directMs = median(directEcho);
console.log(`\none upstream call (server-everything echo, stdio), median of ${calls}`);
console.log(`${"from the guest, through codecell".padEnd(34)} ${guestMs.toFixed(3).padStart(9)} ms`);
console.log(`${"from the SDK client, direct".padEnd(34)} ${directMs.toFixed(3).padStart(9)} ms`);
console.log(`${"added by codecell".padEnd(34)} ${(guestMs - directMs).toFixed(3).padStart(9)} ms  (aim: <= 0.2 ms)`);

await everything.close();
await direct.close();
await serve.close();

// 10 independent calls to a 50 ms command tool (sh: it starts in about a millisecond), timed in
// the guest: one call alone, then the ten together, in cells that differ only in
// tool_concurrency.
const wait = path.join(scratch, "wait50.sh");
fs.writeFileSync(wait, "#!/bin/sh\ncat >/dev/null\nsleep 0.05\necho null\n", { mode: 0o755 });
const atOnce = path.join(scratch, "at-once.json");
const cell = (name, language, concurrency) => ({ name, language, pool: 1, tools: ["wait50"],
  limits: { timeout_ms: 60000, cpu_ms: 60000, tool_concurrency: concurrency } });
fs.writeFileSync(atOnce, JSON.stringify({
  tools: [{ name: "wait50", description: "Answers after 50 ms.", command: [wait] }],
  cells: [cell("serial", "ruby", 1), cell("default", "ruby", 8), cell("ten", "ruby", 10),
          cell("py_serial", "python", 1), cell("py_ten", "python", 10)],
}));
const cells = await connect(bin, ["serve", "--config", atOnce]);
const rubyTen = `c = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC, :float_millisecond) }
a = c.(); SB.call("wait50"); one = c.() - a
a = c.(); SB.parallel { |p| 10.times { p.call("wait50") } }; [one, c.() - a]`;
const pythonTen = `import asyncio, time
c = lambda: time.monotonic() * 1000
a = c(); sb.call("wait50"); one = c() - a
a = c(); await asyncio.gather(*[sb.acall("wait50") for _ in range(10)]); [one, c() - a]`;
const rows = [["serial", "Ruby SB.parallel, tool_concurrency 1", rubyTen],
              ["default", "Ruby SB.parallel, tool_concurrency 8", rubyTen],
              ["ten", "Ruby SB.parallel, tool_concurrency 10", rubyTen],
              ["py_serial", "Python gather, tool_concurrency 1", pythonTen],
              ["py_ten", "Python gather, tool_concurrency 10", pythonTen]];
console.log(`\n10 independent calls to a 50 ms tool in one script, median of ${reps} runs`);
console.log(`${"".padEnd(38)} ${"one call".padStart(9)} ${"ten calls".padStart(10)} ${"ten / one".padStart(10)}`);
for (const [name, label, code] of rows) {
  const ones = [], tens = [];
  for (let r = 0; r < reps; r++) {
    const res = await cells.callTool({ name, arguments: { code } });
    if (res.structuredContent?.status !== "ok") throw new Error(JSON.stringify(res.structuredContent));
    ones.push(res.structuredContent.value[0]);
    tens.push(res.structuredContent.value[1]);
  }
  const one = median(ones), ten = median(tens);
  console.log(`${label.padEnd(38)} ${one.toFixed(1).padStart(9)} ${ten.toFixed(1).padStart(10)} ${(ten / one).toFixed(2).padStart(10)}`);
}
console.log("(ms; the aim for concurrent calls: ten / one <= 1.3, where serial is about 10)");
await cells.close();
