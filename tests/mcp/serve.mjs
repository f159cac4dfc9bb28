// Starts `codecell serve --config CONFIG --http 127.0.0.1:0` and resolves with the child and
// its URL (a string) once it says it listens; rejects if it exits first.
import { spawn } from "node:child_process";

export function startHttpServer(bin, config) {
  const server = spawn(bin, ["serve", "--config", config, "--http", "127.0.0.1:0"], {
    stdio: ["ignore", "inherit", "pipe"],
  });
  return new Promise((resolve, reject) => {
    let err = "";
    server.stderr.on("data", (chunk) => {
      err += chunk;
      const m = err.match(/listening on (http:\/\/\S+)/);
      if (m) resolve({ server, url: m[1] });
    });
    server.on("exit", (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
}
