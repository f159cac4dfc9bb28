// A real MCP server, built with the official SDK, for the failures that the reference servers
// cannot be asked for: a crash in the middle of a call, a server that stops answering, a call
// that must be cancelled, a tool list that changes, and names that collide once sanitised.
//
//   node upstream_fixture.mjs [stdio]          over stdin/stdout
//   node upstream_fixture.mjs http PORTFILE    Streamable HTTP on 127.0.0.1, port written to PORTFILE
//   node upstream_fixture.mjs collide          tools "get-sum" and "get_sum"
//   node upstream_fixture.mjs old              speaks only MCP 2025-03-26 (answers initialize with it)
//   node upstream_fixture.mjs picky            refuses initialize unless asked for 2025-06-18
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import fs from "node:fs";
import http from "node:http";
import { InitializeRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const mode = process.argv[2] ?? "stdio";
let cancelled = 0;

function build() {
  const server = new McpServer({ name: "codecell-fixture", version: "1.0.0" });
  const text = (value) => ({ content: [{ type: "text", text: typeof value === "string" ? value : JSON.stringify(value) }] });
  if (mode === "collide") {
    server.registerTool("get-sum", { inputSchema: { a: z.number() } }, async ({ a }) => text(a));
    server.registerTool("get_sum", { inputSchema: { a: z.number() } }, async ({ a }) => text(a));
    return server;
  }
  server.registerTool("echo", { description: "Echoes the message.", inputSchema: { message: z.string() } },
    async ({ message }) => text(message));
  server.registerTool("pid", { description: "The server's process id." }, async () => text({ pid: process.pid }));
  server.registerTool("crash", { description: "Exits the server while the call is in flight." }, async () => {
    setTimeout(() => process.exit(3), 10);
    return new Promise(() => {});
  });
  server.registerTool("hang", { description: "Blocks the server's only thread for good." }, async () => {
    for (;;);
  });
  server.registerTool("slow", { description: "Answers after `ms` milliseconds, unless cancelled.", inputSchema: { ms: z.number() } },
    async ({ ms }, extra) => new Promise((resolve) => {
      const timer = setTimeout(() => resolve(text("done")), ms);
      extra.signal.addEventListener("abort", () => { cancelled++; clearTimeout(timer); resolve(text("aborted")); });
    }));
  server.registerTool("steps", { description: "Reports `n` steps of progress, `ms` apart.", inputSchema: { n: z.number(), ms: z.number() } },
    async ({ n, ms }, extra) => {
      for (let i = 1; i <= n; i++) {
        await new Promise((r) => setTimeout(r, ms));
        const token = extra._meta?.progressToken;
        if (token !== undefined)
          await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: i, total: n, message: `step ${i}` } });
      }
      return text(n);
    });
  server.registerTool("cancelled", { description: "How many calls were cancelled so far." }, async () => text({ cancelled }));
  server.registerTool("env", { description: "The names and values of the server's environment." }, async () => text(process.env));
  server.registerTool("add-tool", { description: "Adds the tool `name` (the list changes).", inputSchema: { name: z.string() } },
    async ({ name }) => {
      server.registerTool(name, { description: "Added at run time." }, async () => text("added " + name));
      return text("ok");
    });
  server.registerTool("fail", { description: "Reports an error (isError)." }, async () => ({
    isError: true, content: [{ type: "text", text: "the fixture failed on purpose" }],
  }));
  return server;
}

// An older server: the SDK's own initialize, with the revision it would not pick by itself.
function older(server, accept) {
  const sdk = server.server;
  const original = sdk._oninitialize.bind(sdk);
  sdk.setRequestHandler(InitializeRequestSchema, async (request) => {
    if (!accept(request.params.protocolVersion))
      throw new McpError(-32602, `unsupported protocol version ${request.params.protocolVersion}`);
    const result = await original(request);
    return { ...result, protocolVersion: mode === "old" ? "2025-03-26" : request.params.protocolVersion };
  });
  return server;
}

if (mode === "http") {
  // One transport and one server per session, as the SDK's examples do.
  const sessions = new Map();
  const httpServer = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
    const id = req.headers["mcp-session-id"];
    let transport = id && sessions.get(id);
    if (!transport) {
      if (req.headers.authorization !== "Bearer fixture-secret") {
        res.writeHead(401).end("unauthorized");
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => Math.random().toString(36).slice(2),
        onsessioninitialized: (sid) => sessions.set(sid, transport),
      });
      await build().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  });
  httpServer.listen(0, "127.0.0.1", () => fs.writeFileSync(process.argv[3], String(httpServer.address().port)));
} else if (mode === "old") {
  await older(build(), () => true).connect(new StdioServerTransport());
} else if (mode === "picky") {
  await older(build(), (v) => v === "2025-06-18").connect(new StdioServerTransport());
} else {
  await build().connect(new StdioServerTransport());
}
