// docs/configuration.schema.json says what the loader accepts: the example files pass both,
// bad files fail both, and the schema's limit keys are the loader's.
import Ajv2020 from "ajv/dist/2020.js";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, "..", "..");
const bin = process.env.CODECELL_BIN ?? path.join(root, "build", "codecell");
const schema = JSON.parse(fs.readFileSync(path.join(root, "docs", "configuration.schema.json"), "utf8"));
const validate = new Ajv2020({ allErrors: true }).compile(schema);

function loader(config, dir) {
  const file = path.join(dir, "cells.json");
  fs.writeFileSync(file, JSON.stringify(config));
  return spawnSync(bin, ["describe", "--config", file], { encoding: "utf8" });
}

test("the example configurations are valid for the schema and for codecell", () => {
  for (const file of [path.join(root, "examples", "cells.json"), path.join(root, "examples", "mcp.json"),
                      path.join(here, "cells.json")]) {
    const config = JSON.parse(fs.readFileSync(file, "utf8"));
    assert.ok(validate(config), `${file}: ${JSON.stringify(validate.errors)}`);
    const r = spawnSync(bin, ["describe", "--config", file], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
  }
});

test("bad files are refused by both", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "codecell-schema-"));
  const cell = { name: "ruby", language: "ruby", pool: 0 };
  const bad = [
    { cells: [cell], extra: 1 },
    { cells: [] },
    { cells: [{ ...cell, language: "cobol" }] },
    { cells: [{ ...cell, name: "1abc" }] },
    // A dot is not in ^[a-zA-Z0-9_-]{1,64}$: Claude Desktop would withhold every tool.
    { cells: [{ ...cell, name: "ruby.v3" }] },
    { cells: [{ ...cell, name: "x".repeat(65) }] },
    { cells: [{ ...cell, sessions: { default: "yes" } }] },
    { cells: [{ ...cell, sessions: { enabled: false, default: true } }] },
    { cells: [{ ...cell, limits: { speed: 1 } }] },
    { cells: [{ ...cell, limits: { memory_bytes: 1000 } }] },
    { cells: [{ ...cell, pool: 65 }] },
    { cells: [{ ...cell, mounts: [{ source: ".", dest: "/d", mode: "wr" }] }] },
    { cells: [{ ...cell, sessions: { ttl: 1 } }] },
    { cells: [{ ...cell, on_unsupported: "panic" }] },
    { tools: [{ name: "t" }], cells: [cell] },
    { tools: [{ name: "t", command: ["/bin/cat"],
                input_schema: { type: "object", properties: { x: { type: "float" } } } }], cells: [cell] },
    { tools: [{ name: "t", command: ["/bin/cat"],
                input_schema: { type: "object", properties: { x: { type: "array", items: { type: "int" } } } } }],
      cells: [cell] },
    { tools: [{ name: "t", command: ["/bin/cat"], input_schema: { type: "array" } }], cells: [cell] },
    { mcp_servers: { Memory: { command: ["/bin/true"] } }, cells: [cell] },
    { mcp_servers: { m: { command: ["/bin/true"], url: "http://127.0.0.1:1/mcp" } }, cells: [cell] },
    { mcp_servers: { m: { url: "ftp://x" } }, cells: [cell] },
    { tools: [{ name: "t", command: ["/bin/cat"], approval: "sometimes" }], cells: [cell] },
    { mcp_servers: { m: { command: ["/bin/true"], approval: true } }, cells: [cell] },
    { mcp_servers: { m: { url: "http://127.0.0.1:1/mcp", approval: "ask" } }, cells: [cell] },
  ];
  try {
    for (const config of bad) {
      assert.equal(validate(config), false, `schema accepted ${JSON.stringify(config)}`);
      const r = loader(config, dir);
      assert.equal(r.status, 2, `codecell accepted ${JSON.stringify(config)}`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("the schema's limits are the loader's", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "codecell-schema-"));
  try {
    const r = loader({ cells: [{ name: "ruby", language: "ruby", limits: { nope: 1 } }] }, dir);
    const known = r.stderr.match(/unknown limit \((?:did you mean "[^"]*"\? )?known: ([^)]*)\)/)[1].split(", ");
    const inSchema = Object.keys(schema.$defs.cell.properties.limits.properties);
    assert.deepEqual([...inSchema].sort(), [...known].sort());
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
