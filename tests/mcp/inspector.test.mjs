// codecell serve driven by the MCP Inspector's CLI (npm @modelcontextprotocol/inspector, pinned
// in package.json), the client that speaks both eras: the default (initialize, 2025-11-25) and
// `--protocol-era modern` (2026-07-28: server/discover, per-request _meta), over stdio and HTTP.
// Each Inspector run is one client connection: over stdio a fresh server process, over HTTP one
// MCP session (legacy) or a set of stateless requests (modern), so state that outlives a run is
// only a modern handle over HTTP.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { startHttpServer } from "./serve.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = process.env.CODECELL_BIN ?? path.join(here, "..", "..", "build", "codecell");
const node = process.execPath;
const inspector = path.join(here, "node_modules", "@modelcontextprotocol", "inspector", "clients",
  "launcher", "build", "index.js");
// The Inspector keeps a catalog and client config under HOME: a scratch one, not the user's.
const home = fs.mkdtempSync(path.join(os.tmpdir(), "codecell-inspector-"));
const config = path.join(home, "cells.json");
const base = JSON.parse(fs.readFileSync(path.join(here, "cells.json"), "utf8"));
base.cells[0].mounts = [{ source: path.join(here, "data"), dest: "/data", description: "a small CSV" }];
fs.writeFileSync(config, JSON.stringify(base));
process.on("exit", () => fs.rmSync(home, { recursive: true, force: true }));

// One Inspector CLI run: { status, json (the parsed stdout), stderr }.
function inspect(target, era, ...args) {
  const eraFlags = era === "modern" ? ["--protocol-era", "modern"] : [];
  const r = spawnSync(node, [inspector, "--cli", "--format", "json", ...eraFlags, ...args, ...target], {
    encoding: "utf8",
    timeout: 120000,
    env: { ...process.env, HOME: home, MCP_CATALOG_PATH: path.join(home, "mcp.json") },
  });
  let json;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    json = undefined;
  }
  return { status: r.status, json, stderr: r.stderr, stdout: r.stdout };
}

const call = (target, era, tool, args) =>
  inspect(target, era, "--method", "tools/call", "--tool-name", tool, "--tool-args-json", JSON.stringify(args));

// The result of a tools/call run. The Inspector exits 5 ("tool_is_error") when the result has
// isError, and 0 otherwise.
function result(r) {
  assert.ok(r.json?.result, `inspector failed (${r.status}): ${r.stdout} ${r.stderr}`);
  assert.equal(r.status, r.json.result.isError ? 5 : 0, r.stderr);
  return r.json.result;
}

let http;
before(async () => (http = await startHttpServer(bin, config)));
after(() => http.server.kill("SIGTERM"));

const targets = {
  stdio: () => ["--", bin, "serve", "--config", config],
  http: () => ["--server-url", http.url],
};

for (const [kind, target] of Object.entries(targets)) {
  for (const era of ["legacy", "modern"]) {
    describe(`${era} era over ${kind}`, () => {
      test("tools/list passes the Inspector's --strict portability check with no findings", () => {
        const r = inspect(target(), era, "--method", "tools/list", "--strict");
        assert.equal(r.status, 0, r.stderr);
        // Each finding (warnings included) is a "Warning: tool …" or "Error: tool …" block.
        assert.doesNotMatch(r.stderr, /^(Warning|Error): tool/m, r.stderr);
        assert.doesNotMatch(r.stderr + r.stdout, /\d+ warnings? across/);
        const names = r.json.result.tools.map((t) => t.name);
        assert.deepEqual(names, ["ruby", "python", "sessions"]);
        const session = r.json.result.tools[0].inputSchema.properties.session;
        if (era === "modern") assert.equal(session.pattern, "^(new|cs_[0-9a-f]{32})$");
        else assert.equal(session.pattern, "^[A-Za-z0-9_.-]+$");
      });

      test("a call runs the code", () => {
        const r = result(call(target(), era, "ruby", { code: "File.read('/data/small.csv').strip + (1+1).to_s" }));
        assert.equal(r.isError, false);
        assert.equal(r.structuredContent.value, "a,b2");
        if (era === "modern") assert.equal(r._meta["io.modelcontextprotocol/serverInfo"].name, "codecell");
      });

      test("a bad argument is a tool error the model can act on", () => {
        const r = result(call(target(), era, "ruby", { code: "1", cmd: "x" }));
        assert.equal(r.isError, true);
        assert.match(r.content[0].text, /Unknown argument "cmd"/);
      });

      test("a session call says it created the session; list and close in the same client", () => {
        const session = era === "modern" ? "new" : "inspected";
        const r = result(call(target(), era, "ruby", { code: "x = 41", session }));
        assert.equal(r.structuredContent.session.created, true);
        if (era === "modern") assert.match(r.structuredContent.session.id, /^cs_[0-9a-f]{32}$/);
        else assert.equal(r.structuredContent.session.id, "inspected");
        // A new Inspector run is another client: it sees none of the first one's sessions
        // (the first run's sessions ended with it, or are another client's handles).
        const list = result(call(target(), era, "sessions", { action: "list" }));
        if (era === "modern" && kind === "http") {
          // Without bearer tokens every HTTP client is one context: no handle is ever listed.
          assert.equal(list.isError, true);
          assert.match(list.content[0].text, /lists no session handles/);
        } else {
          assert.equal(list.isError, false);
          assert.deepEqual(list.structuredContent.sessions, []);
        }
        const closed = result(call(target(), era, "sessions", { action: "close", session: "nothing" }));
        assert.equal(closed.isError, true);
        assert.match(closed.content[0].text, /no open session/);
      });

      test("a session handle that is not the client's is a tool error", () => {
        const handle = "cs_" + "ab".repeat(16);
        const r = result(call(target(), era, "ruby", { code: "x", session: handle }));
        if (era === "modern") {
          assert.equal(r.isError, true);
          assert.match(r.content[0].text, /not one this server gave you/);
        } else {
          // In the legacy era a session is a name the client chooses: this one is new.
          assert.equal(r.structuredContent.session.created, true);
        }
      });
    });
  }
}

// Only a modern handle outlives the Inspector run that made it: over HTTP, create, use, list,
// close, and the closed handle then reads as expired.
test("modern handles over HTTP: create, reuse, list, close, expired", () => {
  const url = targets.http();
  const made = result(call(url, "modern", "ruby", { code: "x = 41", session: "new" }));
  const handle = made.structuredContent.session.id;
  const used = result(call(url, "modern", "ruby", { code: "x + 1", session: handle }));
  assert.equal(used.structuredContent.value, 42);
  assert.deepEqual(used.structuredContent.session, { id: handle, created: false });
  // A server without bearer tokens lists no handle: another client would read it.
  const list = result(call(url, "modern", "sessions", { action: "list" }));
  assert.equal(list.isError, true);
  assert.ok(!JSON.stringify(list).includes(handle), JSON.stringify(list));
  const closed = result(call(url, "modern", "sessions", { action: "close", session: handle }));
  assert.deepEqual(closed.structuredContent.closed, [{ tool: "ruby", session: handle }]);
  const expired = result(call(url, "modern", "ruby", { code: "x", session: handle }));
  assert.equal(expired.isError, true);
  assert.match(expired.content[0].text, /has expired/);
  assert.match(expired.content[0].text, /"session": "new"/);
});

// docs/mcp.md's Inspector lines, run as written there (from the repository's root), with the
// Inspector of package.json in place of npx's download: the "--" before codecell's command is
// what keeps the Inspector from taking codecell's --config as its own.
describe("the Inspector lines of docs/mcp.md", () => {
  const root = path.join(here, "..", "..");
  const lines = fs.readFileSync(path.join(root, "docs", "mcp.md"), "utf8").split("\n")
    .filter((l) => l.startsWith("npx @modelcontextprotocol/inspector --cli "));
  test("there are some, and each works as written", () => {
    assert.ok(lines.length >= 2, "docs/mcp.md shows no Inspector --cli line");
    for (const line of lines) {
      const rest = line.slice("npx @modelcontextprotocol/inspector ".length);
      const r = spawnSync("sh", ["-c", `"$NODE" "$INSPECTOR" ${rest}`], {
        cwd: root, encoding: "utf8", timeout: 120000,
        env: { ...process.env, NODE: node, INSPECTOR: inspector, HOME: home,
               MCP_CATALOG_PATH: path.join(home, "mcp.json"),
},
      });
      assert.equal(r.status, 0, `${line}\n${r.stdout}\n${r.stderr}`);
      const answer = JSON.parse(r.stdout);
      if (line.includes("tools/list")) {
        assert.deepEqual(answer.tools.map((t) => t.name).slice(0, 3), ["ruby", "python", "data-analysis"]);
      } else {
        assert.equal(answer.structuredContent.value, 42, r.stdout);
      }
    }
  });
});
