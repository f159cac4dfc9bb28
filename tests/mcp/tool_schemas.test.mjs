// Every inputSchema and outputSchema the server lists is a valid JSON Schema (2020-12, the
// dialect MCP names), checked by ajv against the meta-schema and compiled in strict mode, in
// both revisions, for every configuration we ship or test with. Clients that validate
// structured output (the Python SDK with jsonschema, ajv in TypeScript) fail on an invalid one.
import Ajv2020 from "ajv/dist/2020.js";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, "..", "..");
const bin = process.env.CODECELL_BIN ?? path.join(root, "build", "codecell");

// One configuration with every kind of tool entry and schema type, sessions on and off.
function everythingConfig(dir) {
  const file = path.join(dir, "everything.json");
  const types = {
    s: { type: "string" }, i: { type: "integer" }, n: { type: "number" }, b: { type: "boolean" },
    a: { type: "array", items: { type: "string" } }, o: { type: "object" },
    e: { type: "string", enum: ["x", "y"] },
  };
  fs.writeFileSync(file, JSON.stringify({
    tools: [
      { name: "typed", description: "every type", command: ["/bin/cat"],
        input_schema: { type: "object", properties: types, required: ["s"] } },
      { name: "bare", command: ["/bin/cat"] },
    ],
    cells: [
      { name: "r", language: "ruby", pool: 0, tools: ["typed", "bare"],
        sessions: { max: 2 } },
      { name: "p", language: "python", pool: 0, tools: ["typed"], sessions: { enabled: false } },
    ],
  }));
  return file;
}

const configs = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "codecell-schemas-"));
  return [
    path.join(root, "examples", "cells.json"),
    path.join(root, "examples", "mcp.json"),
    path.join(here, "cells.json"),
    everythingConfig(dir),
  ];
};

// codecell serve on pipes, asked tools/list in the revision given; resolves with the tools.
function listTools(config, revision) {
  const server = spawn(bin, ["serve", "--config", config], {
    cwd: path.dirname(config), stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  server.stderr.on("data", (c) => { stderr += c; });
  const lines = readline.createInterface({ input: server.stdout });
  const send = (m) => server.stdin.write(JSON.stringify(m) + "\n");
  const client = { name: "schemas", version: "1" };
  return new Promise((resolve, reject) => {
    const fail = (why) => { server.kill(); reject(new Error(`${config} ${revision}: ${why}\n${stderr}`)); };
    const timer = setTimeout(() => fail("no tools/list answer in 120 s"), 120000);
    server.on("exit", (code) => fail(`serve exited ${code}`));
    lines.on("line", (line) => {
      const m = JSON.parse(line);
      if (m.id === 0) {
        send({ jsonrpc: "2.0", method: "notifications/initialized" });
        send({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });
      } else if (m.id === 1) {
        clearTimeout(timer);
        server.removeAllListeners("exit");
        server.stdin.end();
        if (m.error) reject(new Error(`${config} ${revision}: ${JSON.stringify(m.error)}`));
        else resolve(m.result.tools);
      }
    });
    if (revision === "2025-11-25") {
      send({ jsonrpc: "2.0", id: 0, method: "initialize",
             params: { protocolVersion: revision, capabilities: {}, clientInfo: client } });
    } else {
      send({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: {
        "io.modelcontextprotocol/protocolVersion": revision,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": client } } });
    }
  });
}

function checkSchema(ajv, where, schema) {
  assert.equal(typeof schema, "object", `${where}: not an object`);
  assert.ok(ajv.validateSchema(schema), `${where}: ${ajv.errorsText(ajv.errors)}\n${JSON.stringify(schema)}`);
  assert.doesNotThrow(() => ajv.compile(schema), `${where} does not compile in strict mode`);
}

for (const revision of ["2025-11-25", "2026-07-28"]) {
  test(`every listed schema is valid JSON Schema (${revision})`, async () => {
    for (const config of configs()) {
      // MCP's own x-mcp-header annotation is the one keyword outside the vocabulary.
      const ajv = new Ajv2020({ strict: true, allErrors: true });
      ajv.addKeyword("x-mcp-header");
      const tools = await listTools(config, revision);
      assert.ok(tools.length > 0, `${config}: no tools`);
      let outputs = 0;
      for (const tool of tools) {
        const where = `${path.basename(config)} ${revision} ${tool.name}`;
        checkSchema(ajv, `${where} inputSchema`, tool.inputSchema);
        assert.equal(tool.inputSchema.type, "object", `${where}: inputSchema must be an object`);
        if (tool.outputSchema !== undefined) {
          checkSchema(ajv, `${where} outputSchema`, tool.outputSchema);
          outputs++;
        }
      }
      assert.ok(outputs > 0, `${config}: no outputSchema was checked`);
    }
  });
}

test("the check catches the schema a json_pack format once produced", () => {
  const ajv = new Ajv2020({ strict: true });
  const broken = { type: "array", items: { properties: { tool: "type" } } };
  assert.equal(ajv.validateSchema(broken), false);
});
