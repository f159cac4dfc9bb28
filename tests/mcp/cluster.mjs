// Several `codecell serve --http` instances behind nginx, all on 127.0.0.1, for the scale_out
// test and bench/proxy. nginx runs in the foreground on a temporary configuration whose http
// part is the shipped packaging/nginx/codecell.conf with this run's ports written in, so the
// test exercises the file operators install. Everything is started here and stopped by stop().
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
export const shippedConfig = path.join(root, "packaging", "nginx", "codecell.conf");
const NAMES = ["a", "b", "c"];
const SHIPPED_PORTS = [8101, 8102, 8103];

export function findNginx() {
  for (const p of [process.env.NGINX, "/usr/sbin/nginx", "/usr/bin/nginx"])
    if (p && fs.existsSync(p)) return p;
  return null;
}

// Resolves when fn() is true; polls every 50 ms up to timeoutMs (generous: loaded machines).
export async function until(fn, what, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function exited(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode ?? child.signalCode);
    child.on("exit", (code, signal) => resolve(code ?? signal));
  });
}

// One codecell serve instance: resolves once it says it listens (its pools are warm then).
function startInstance(bin, config, name, publicHost, extra) {
  const child = spawn(bin, ["serve", "--config", config, "--http", "127.0.0.1:0", "--instance", name,
    "--allow-host", publicHost, ...extra], { stdio: ["ignore", "ignore", "pipe"] });
  const instance = { name, child, stderr: "", exit: exited(child) };
  child.stderr.on("data", (chunk) => (instance.stderr += chunk));
  return new Promise((resolve, reject) => {
    const onData = () => {
      const m = instance.stderr.match(/listening on http:\/\/127\.0\.0\.1:(\d+)\/mcp/);
      if (!m) return;
      child.stderr.off("data", onData);
      instance.port = Number(m[1]);
      instance.base = `http://127.0.0.1:${instance.port}`;
      resolve(instance);
    };
    child.stderr.on("data", onData);
    child.on("exit", (code) => reject(new Error(`instance ${name} exited ${code}: ${instance.stderr}`)));
  });
}

// The shipped configuration with this run's addresses: the three instances' ports for the
// shipped ones, and nginx's listening port. With n < 3 the pools leave out the instances not
// started (their ports: reserved and released, so nothing answers there).
function renderConfig(ports, listenPort, n) {
  let text = fs.readFileSync(shippedConfig, "utf8");
  SHIPPED_PORTS.forEach((p, i) => (text = text.replaceAll(`127.0.0.1:${p}`, `127.0.0.1:${ports[i]}`)));
  // The pools hold only the instances started (the others' own upstreams stay, unused).
  for (const port of ports.slice(n))
    text = text.replaceAll(`    server 127.0.0.1:${port} max_fails=1 fail_timeout=10s;\n`, "");
  const listen = "listen 127.0.0.1:8080;";
  if (!text.includes(listen)) throw new Error(`${shippedConfig} no longer has "${listen}"`);
  return text.replace(listen, `listen 127.0.0.1:${listenPort};`);
}

function mainConfig(dir, include, workers) {
  const asRoot = process.getuid() === 0;
  // nginx started as root switches its workers to `user`: root here, so that they can use the
  // temporary directory (its own default, nobody, could not).
  return `${asRoot ? "user root;\n" : ""}daemon off;
master_process on;
worker_processes ${workers};
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path ${dir}/client_body;
    proxy_temp_path ${dir}/proxy;
    fastcgi_temp_path ${dir}/fastcgi;
    uwsgi_temp_path ${dir}/uwsgi;
    scgi_temp_path ${dir}/scgi;
    include ${include};
}
`;
}

function startNginx(nginx, dir, port) {
  const child = spawn(nginx, ["-p", dir, "-e", path.join(dir, "error.log"), "-c", path.join(dir, "nginx.conf")],
    { stdio: ["ignore", "ignore", "pipe"] });
  const proc = { child, stderr: "", exit: exited(child) };
  child.stderr.on("data", (c) => (proc.stderr += c));
  return until(async () => {
    if (child.exitCode !== null) throw new Error(`nginx exited ${child.exitCode}: ${proc.stderr} ${errorLog(dir)}`);
    return await new Promise((resolve) => {
      const s = net.connect(port, "127.0.0.1", () => (s.destroy(), resolve(true)));
      s.on("error", () => resolve(false));
    });
  }, "nginx to listen").then(() => proc);
}

function errorLog(dir) {
  try {
    return fs.readFileSync(path.join(dir, "error.log"), "utf8");
  } catch {
    return "";
  }
}

// Starts n instances (a, b, c …; at most 3, as the shipped file has) and nginx before them.
// options: instanceFlags (extra serve flags), workers (nginx worker processes).
export async function startCluster(bin, config, n = 3, options = {}) {
  const nginx = findNginx();
  if (!nginx) throw new Error("nginx is not installed (scripts/bootstrap installs it)");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "codecell-cluster-"));
  const listenPort = await freePort();
  const publicHost = `127.0.0.1:${listenPort}`;
  const instances = await Promise.all(NAMES.slice(0, n).map((name) =>
    startInstance(bin, config, name, publicHost, options.instanceFlags ?? [])));
  const ports = await Promise.all(NAMES.map((_, i) => (instances[i] ? instances[i].port : freePort())));
  fs.writeFileSync(path.join(dir, "codecell.conf"), renderConfig(ports, listenPort, n));
  fs.writeFileSync(path.join(dir, "nginx.conf"), mainConfig(dir, path.join(dir, "codecell.conf"), options.workers ?? 2));
  let proxy;
  try {
    proxy = await startNginx(nginx, dir, listenPort);
  } catch (e) {
    instances.forEach((i) => i.child.kill("SIGKILL"));
    throw e;
  }
  const byName = Object.fromEntries(instances.map((i) => [i.name, i]));
  return {
    url: `http://${publicHost}/mcp`,
    nginxPid: proxy.child.pid,
    instances: byName,
    dir,
    errorLog: () => errorLog(dir),
    // The instance's /metrics, as text (straight, not through nginx).
    metrics: async (name) => (await fetch(`${byName[name].base}/metrics`)).text(),
    healthz: async (name) => {
      const r = await fetch(`${byName[name].base}/healthz`);
      return { status: r.status, text: await r.text() };
    },
    // Stops what still runs; throws when an instance stopped here did not exit 0 (under the
    // sanitizers, a leak or an error found at exit).
    async stop() {
      const stopped = instances.filter((i) => i.child.exitCode === null && i.child.signalCode === null);
      for (const i of stopped) i.child.kill("SIGINT");
      proxy.child.kill("SIGQUIT");
      await Promise.all([...instances.map((i) => i.exit), proxy.exit]);
      fs.rmSync(dir, { recursive: true, force: true });
      for (const i of stopped)
        if (i.child.exitCode !== 0) throw new Error(`instance ${i.name} exited ${i.child.exitCode ?? i.child.signalCode}: ${i.stderr.slice(-4000)}`);
    },
  };
}

// A counter of the /metrics text: the sum of every line of that metric whose labels hold all
// of `labels` (as `name="value"` strings).
export function metric(text, name, ...labels) {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name + "{") && !line.startsWith(name + " ")) continue;
    if (labels.every((l) => line.includes(l))) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}
