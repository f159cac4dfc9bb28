// Rich values (docs/results.md, "Rich values") as the official SDK clients receive them, over
// stdio and Streamable HTTP, in both eras: the value's markdown as text content, its HTML as an
// embedded text/html resource, its SVG and PNG as images, all within the cell's model_chars; a
// method that raises is a note, never a failed run. The SDK validates structuredContent
// against the tool's outputSchema on every call.
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
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "codecell-rich-"));
const config = path.join(scratch, "cells.json");
const limits = { timeout_ms: 20000, cpu_ms: 10000, model_chars: 4000 };
fs.writeFileSync(config, JSON.stringify({
  tools: [],
  cells: [
    { name: "python", language: "python", pool: 1, limits, sessions: { enabled: false } },
    { name: "ruby", language: "ruby", pool: 1, limits, sessions: { enabled: false } },
  ],
}));
process.on("exit", () => fs.rmSync(scratch, { recursive: true, force: true }));

const SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>';
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const MARKDOWN = "| région | € |\n|---|---|\n| Nord | 3 |";
const HTML = "<table><tr><td>Nord</td></tr></table>";
const code = {
  rich: {
    python: `import base64
class Rich:
    def _repr_markdown_(self): return ${JSON.stringify(MARKDOWN)}
    def _repr_html_(self): return (${JSON.stringify(HTML)}, {})
    def _repr_svg_(self): return ${JSON.stringify(SVG)}
    def _repr_png_(self): return base64.b64decode(${JSON.stringify(PNG)})
    def __repr__(self): return "Rich()"
Rich()`,
    ruby: `class Rich
  def to_markdown = ${JSON.stringify(MARKDOWN)}
  def to_html = ${JSON.stringify(HTML)}
  def to_svg = ${JSON.stringify(SVG)}
  def to_png = ${JSON.stringify(PNG)}.unpack1("m")
  def inspect = "Rich()"
end
Rich.new`,
  },
  raising: {
    python: "class Bad:\n    def _repr_markdown_(self): raise KeyError('nope')\n    def _repr_html_(self): return '<i>ok</i>'\nBad()",
    ruby: "class Bad\n  def to_markdown = raise(KeyError, 'nope')\n  def to_html = '<i>ok</i>'\nend\nBad.new",
  },
  huge: {
    python: "class Huge:\n    def _repr_markdown_(self): return ('€' * 99 + '😀\\n') * 300\nHuge()",
    ruby: "class Huge\n  def to_markdown = ('€' * 99 + \"😀\\n\") * 300\nend\nHuge.new",
  },
};

function stopped(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.on("exit", (c) => resolve(c));
  });
}

const eras = {
  "2025-11-25": {
    stdio: () => new StdioClientTransport({ command: bin, args: ["serve", "--config", config], stderr: "ignore" }),
    http: (url) => new StreamableHTTPClientTransport(new URL(url)),
    client: () => new Client({ name: "codecell-tests", version: "1.0.0" }),
  },
  "2026-07-28": {
    stdio: () => new ModernStdio({ command: bin, args: ["serve", "--config", config], stderr: "ignore" }),
    http: (url) => new ModernHttp(new URL(url)),
    client: () => new ModernClient({ name: "codecell-tests", version: "1.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } }),
  },
};

for (const [era, make] of Object.entries(eras)) {
  for (const kind of ["stdio", "http"]) {
    describe(`${era} over ${kind}`, () => {
      let client, server;
      before(async () => {
        let transport;
        if (kind === "http") {
          const started = await startHttpServer(bin, config);
          server = started.server;
          transport = make.http(started.url);
        } else {
          transport = make.stdio();
        }
        client = make.client();
        await client.connect(transport);
        await client.listTools(); // the SDK validates later results against these schemas
      });
      after(async () => {
        await client.close();
        if (server) {
          server.kill("SIGTERM");
          assert.equal(await stopped(server), 0);
        }
      });
      const call = (name, source) => client.callTool({ name, arguments: { code: source } });

      test("python: a pandas DataFrame is a markdown table of its head, tail and shape", async () => {
        const r = await call("python", "import pandas as pd\n" +
          "pd.DataFrame({'city': ['Lisboa', 'Zürich'] * 50, 'n': range(100)})");
        assert.equal(r.isError, false);
        const rows = r.content[1].text.split("\n");
        assert.deepEqual(rows.slice(0, 3), ["|  | city | n |", "|---|---|---|", "| 0 | Lisboa | 0 |"]);
        assert.equal(rows[7], "| … | … | … |");
        assert.equal(rows[12], "| 99 | Zürich | 99 |");
        assert.equal(rows.at(-1), "100 rows × 2 columns");
        // pandas' own HTML as the resource, cut within the same budget.
        assert.equal(r.content[2].resource.mimeType, "text/html");
        assert.match(r.content[2].resource.text, /^<div>/);
        const total = [r.content[0].text, r.content[1].text, r.content[2].resource.text]
          .reduce((n, t) => n + [...t].length, 0);
        assert.ok(total <= 4000, `${total} characters`);
      });

      for (const lang of ["python", "ruby"]) {
        test(`${lang}: markdown text, HTML resource, SVG and PNG images`, async () => {
          const r = await call(lang, code.rich[lang]);
          assert.equal(r.isError, false);
          const lean = JSON.parse(r.content[0].text);
          assert.equal(lean.value, "Rich()");
          assert.deepEqual(lean.display.markdown, { chars: MARKDOWN.length });
          assert.deepEqual(r.content[1], { type: "text", text: MARKDOWN });
          assert.deepEqual(r.content[2], {
            type: "resource",
            resource: { uri: "codecell://result/display.html", mimeType: "text/html", text: HTML },
          });
          assert.equal(r.content[3].mimeType, "image/svg+xml");
          assert.equal(Buffer.from(r.content[3].data, "base64").toString("utf8"), SVG);
          assert.equal(r.content[4].mimeType, "image/png");
          assert.deepEqual(Buffer.from(r.content[4].data, "base64"), Buffer.from(PNG, "base64"));
          assert.equal(r.content.length, 5);
          assert.deepEqual(r.structuredContent.display, lean.display);
        });

        test(`${lang}: a method that raises is a note; the others still come back`, async () => {
          const r = await call(lang, code.raising[lang]);
          assert.equal(r.isError, false);
          assert.match(r.structuredContent.display_notes[0], /^markdown: .*failed: KeyError: .*nope/);
          assert.deepEqual(r.content.slice(1), [{
            type: "resource",
            resource: { uri: "codecell://result/display.html", mimeType: "text/html", text: "<i>ok</i>" },
          }]);
        });

        test(`${lang}: a huge one is cut within model_chars on character boundaries`, async () => {
          const r = await call(lang, code.huge[lang]);
          assert.equal(r.isError, false);
          const markdown = r.content[1].text;
          assert.ok(r.content[0].text.length + markdown.length <= 4000 * 2); // UTF-16 units
          assert.ok([...r.content[0].text].length + [...markdown].length <= 4000);
          assert.ok([...markdown].length > 2000);
          assert.ok(!markdown.includes("\uFFFD"), "no character was split");
          assert.ok(markdown.startsWith("€".repeat(99) + "😀\n"));
          assert.equal(r.structuredContent.display_truncated, true);
        });
      }
    });
  }
}
