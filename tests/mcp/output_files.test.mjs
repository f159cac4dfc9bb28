// The files of a cell's output folder in MCP tool results (issue 30), through the official SDK
// clients of both revisions, over stdio and HTTP: small files embedded as resources (text for
// UTF-8 text, a base64 blob otherwise), pictures as images, a larger file as a resource_link
// that the same client reads with resources/read until it expires, and no other client can.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
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
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "codecell-files-"));
const config = path.join(scratch, "cells.json");
const limits = { timeout_ms: 30000, cpu_ms: 20000 };
fs.writeFileSync(config, JSON.stringify({
  cells: [
    { name: "ruby", language: "ruby", pool: 0, output_folder: "/work/out", limits },
    { name: "python", language: "python", pool: 0, output_folder: "/work/out", limits },
  ],
}));
process.on("exit", () => fs.rmSync(scratch, { recursive: true, force: true }));
// Files over 1 KiB are linked; a link lives 3 s, so that the test of its expiry is short.
const serveArgs = ["serve", "--config", config, "--file-inline", "1K", "--file-link-ttl", "3s"];

// A 1×1 PNG, a CSV, 300 binary bytes and 5000 binary bytes (over the inline cap).
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==", "base64");
const CSV = "city,sales\nLyon,3\n";
const SMALL = Buffer.from(Array.from({ length: 300 }, (_, i) => i % 256));
const BIG = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7) % 256));
const code = {
  ruby: `Dir.mkdir("/work/out")
File.binwrite("/work/out/chart.png", "${PNG.toString("base64")}".unpack1("m"))
File.write("/work/out/sales.csv", ${JSON.stringify(CSV)})
File.binwrite("/work/out/small.bin", "${SMALL.toString("base64")}".unpack1("m"))
File.binwrite("/work/out/big.bin", "${BIG.toString("base64")}".unpack1("m"))
1`,
  python: `import os, base64
os.mkdir("/work/out")
open("/work/out/chart.png", "wb").write(base64.b64decode("${PNG.toString("base64")}"))
open("/work/out/sales.csv", "w").write(${JSON.stringify(CSV)})
open("/work/out/small.bin", "wb").write(base64.b64decode("${SMALL.toString("base64")}"))
open("/work/out/big.bin", "wb").write(base64.b64decode("${BIG.toString("base64")}"))
1`,
};

function startHttp() {
  const server = spawn(bin, [...serveArgs, "--http", "127.0.0.1:0"], { stdio: ["ignore", "inherit", "pipe"] });
  return new Promise((resolve, reject) => {
    let err = "";
    server.stderr.on("data", (chunk) => {
      err += chunk;
      const m = err.match(/listening on (http:\/\/\S+)/);
      if (m) resolve({ server, url: m[1] });
    });
    server.on("exit", (status) => reject(new Error(`serve exited ${status}: ${err}`)));
  });
}

const eras = {
  "2025-11-25": {
    client: () => new Client({ name: "codecell-tests", version: "1.0.0" }),
    stdio: () => new StdioClientTransport({ command: bin, args: serveArgs, stderr: "ignore" }),
    http: (url) => new StreamableHTTPClientTransport(new URL(url)),
    notFound: -32002,
  },
  "2026-07-28": {
    client: () => new ModernClient({ name: "codecell-tests", version: "1.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } }),
    stdio: () => new ModernStdio({ command: bin, args: serveArgs, stderr: "ignore" }),
    http: (url) => new ModernHttp(new URL(url)),
    notFound: -32602,
  },
};

for (const [era, make] of Object.entries(eras)) {
  for (const kind of ["stdio", "http"]) {
    describe(`${era} over ${kind}`, () => {
      let client, server, url;
      const clients = [];
      const connect = async () => {
        const c = make.client();
        await c.connect(kind === "http" ? make.http(url) : make.stdio());
        clients.push(c);
        return c;
      };
      before(async () => {
        if (kind === "http") ({ server, url } = await startHttp());
        client = await connect();
      });
      after(async () => {
        for (const c of clients) await c.close();
        if (server) {
          const stopped = new Promise((resolve) => server.on("exit", resolve));
          server.kill("SIGTERM");
          assert.equal(await stopped, 0, "SIGTERM ends the server with exit code 0");
        }
      });

      test("the server declares resources; resources/list is empty", async () => {
        assert.ok(client.getServerCapabilities()?.resources, "the resources capability");
        const { resources } = await client.listResources();
        assert.deepEqual(resources, []);
      });

      for (const lang of ["ruby", "python"]) {
        test(`${lang}: images, embedded resources and a link that only this client reads`, async () => {
          const r = await client.callTool({ name: lang, arguments: { code: code[lang] } });
          assert.equal(r.isError, false, JSON.stringify(r));
          assert.deepEqual(r.content.map((c) => c.type), ["text", "image", "resource_link", "resource", "resource"]);
          assert.deepEqual(Buffer.from(r.content[1].data, "base64"), PNG);
          // In name order: big.bin, sales.csv, small.bin.
          const [big, csv, small] = [r.content[2], r.content[3].resource, r.content[4].resource];
          assert.deepEqual([csv.mimeType, csv.text, csv.blob], ["text/csv", CSV, undefined]);
          assert.equal(small.mimeType, "application/octet-stream");
          assert.deepEqual(Buffer.from(small.blob, "base64"), SMALL);
          assert.deepEqual([big.name, big.mimeType, big.size], ["big.bin", "application/octet-stream", 5000]);
          assert.match(big.uri, /^codecell:\/\/files\/[0-9a-f]{32}\/big\.bin$/);
          // The model's text names every file, with its type and size.
          const text = JSON.parse(r.content[0].text);
          assert.deepEqual(text.files.map((f) => [f.name, f.size]),
            [["big.bin", 5000], ["sales.csv", CSV.length], ["small.bin", 300]]);

          const read = await client.readResource({ uri: big.uri });
          assert.deepEqual(read.contents.map((c) => [c.uri, c.mimeType]), [[big.uri, "application/octet-stream"]]);
          assert.deepEqual(Buffer.from(read.contents[0].blob, "base64"), BIG);

          // Another client: a second process over stdio, a second MCP session over HTTP. In
          // 2026-07-28 over HTTP without tokens every client is one (docs/mcp.md), so there
          // the link's 128 random bits are all that keep it.
          if (!(era === "2026-07-28" && kind === "http")) {
            const other = await connect();
            await assert.rejects(other.readResource({ uri: big.uri }),
              (e) => e.code === make.notFound && /Resource not found/.test(e.message));
          }
          // A guessed token reads as not found.
          await assert.rejects(client.readResource({ uri: big.uri.replace(/[0-9a-f]{32}/, "0".repeat(32)) }),
            (e) => e.code === make.notFound);
        });
      }

      test("a link expires", async () => {
        const r = await client.callTool({ name: "ruby", arguments: { code: code.ruby } });
        const link = r.content.find((c) => c.type === "resource_link");
        await client.readResource({ uri: link.uri });
        await new Promise((resolve) => setTimeout(resolve, 3500));
        await assert.rejects(client.readResource({ uri: link.uri }),
          (e) => e.code === make.notFound && /Resource not found/.test(e.message));
      });
    });
  }
}
