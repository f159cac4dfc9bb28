"""codecell serve as a systemd service, without a running systemd: socket activation through
systemd-socket-activate (LISTEN_FDS), readiness and stopping through a NOTIFY_SOCKET this test
listens on, and the units of packaging/systemd checked by systemd-analyze."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import unittest

from harness import BIN, LAUNCHED, become_subreaper, stray_children, tempdir
from mcp_peer import INIT, write_config

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
ACTIVATE = shutil.which("systemd-socket-activate")

# A host tool that reports what it inherited: a socket passed to codecell, or the variables
# that name it, must not reach the commands codecell starts.
PROBE_TOOL = """#!/usr/bin/python3
import json, os, sys
sys.stdin.read()
fds = {}
for fd in os.listdir("/proc/self/fd"):
    try:
        fds[fd] = os.readlink("/proc/self/fd/" + fd)
    except OSError:
        pass
names = sorted(k for k in os.environ if k.startswith(("LISTEN_", "NOTIFY_")))
print(json.dumps({"env": names, "sockets": sorted(v for v in fds.values() if "socket" in v)}))
"""


def setUpModule():
    become_subreaper()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, body, session=None, timeout=60):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if session:
        headers["Mcp-Session-Id"] = session
    conn.request("POST", "/mcp", body=json.dumps(body), headers=headers)
    r = conn.getresponse()
    text = r.read().decode()
    conn.close()
    return r.status, r.getheader("Mcp-Session-Id"), text


def knock(port):
    """A connection that makes systemd-socket-activate start codecell. codecell refuses to
    serve and exits, closing the socket: the kernel may reset the connection before connect()
    returns, which is fine, it has done its job."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=30).close()
    except ConnectionError:
        pass


class Activated:
    """systemd-socket-activate -l 127.0.0.1:PORT [-l …] … codecell serve …: it binds, waits for
    the first connection, then execs codecell (same pid) with the socket as fd 3."""

    def __init__(self, test, args, sockets=1, env=()):
        for _ in range(5):  # the free port may be taken between our probe and its bind
            self.ports = [free_port() for _ in range(sockets)]
            listen = [a for p in self.ports for a in ("-l", f"127.0.0.1:{p}")]
            setenv = [a for e in env for a in ("-E", e)]
            self.proc = subprocess.Popen([ACTIVATE, *listen, *setenv, BIN, "serve", *args],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE)
            LAUNCHED.append(self.proc.pid)
            seen = b""
            deadline = time.monotonic() + 30
            while seen.count(b"Listening on") < sockets and self.proc.poll() is None:
                if time.monotonic() > deadline:
                    raise RuntimeError("systemd-socket-activate did not listen: " + seen.decode())
                seen += os.read(self.proc.stderr.fileno(), 4096)
            if self.proc.poll() is None:
                test.addCleanup(self.close)
                return
            self.proc.stderr.close()
        raise RuntimeError("systemd-socket-activate could not bind: " + seen.decode())

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        if not self.proc.stderr.closed:
            self.proc.stderr.close()

    def wait(self, timeout=60):
        code = self.proc.wait(timeout)
        err = self.proc.stderr.read().decode()
        self.proc.stderr.close()
        return code, err


@unittest.skipUnless(ACTIVATE, "systemd-socket-activate is not installed (package systemd)")
class SocketActivation(unittest.TestCase):
    def setUp(self):
        self.dir = tempdir(self)
        tool = os.path.join(self.dir, "probe-tool")
        with open(tool, "w") as f:
            f.write(PROBE_TOOL)
        os.chmod(tool, 0o755)
        self.config = write_config(
            self.dir,
            [{"name": "ruby", "language": "ruby", "pool": 1, "tools": ["inherited"],
              "limits": {"timeout_ms": 20000, "cpu_ms": 5000}}],
            [{"name": "inherited", "command": [tool]}])
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify_path = os.path.join(self.dir, "notify")
        self.notify.bind(self.notify_path)
        self.addCleanup(self.notify.close)

    def notified(self, timeout=60):
        self.notify.settimeout(timeout)
        return self.notify.recv(4096).decode()

    def test_serves_http_on_the_passed_socket_and_reports_ready_and_stopping(self):
        a = Activated(self, ["--config", self.config], env=[f"NOTIFY_SOCKET={self.notify_path}"])
        port = a.ports[0]
        # The first connection starts codecell; its answer comes once the pool is warm.
        status, session, text = post(port, INIT)
        self.assertEqual(status, 200, text)
        version = subprocess.run([BIN, "--version"], capture_output=True, text=True).stdout
        self.assertEqual(json.loads(text)["result"]["serverInfo"]["version"],
                         version.split()[1])
        self.assertEqual(self.notified(), "READY=1")

        # The Host check knows the passed socket's address, as it knows --http's.
        post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "ruby", "arguments": {"code": 'SB.call("inherited")'}}}
        status, _, text = post(port, call, session)
        self.assertEqual(status, 200, text)
        result = json.loads(text)["result"]["structuredContent"]
        self.assertEqual(result["status"], "ok", result)
        self.assertEqual(result["value"], {"env": [], "sockets": []})

        a.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.notified(), "STOPPING=1")
        code, err = a.wait()
        self.assertEqual(code, 0, err)
        self.assertIn(f"listening on http://127.0.0.1:{port}/mcp", err)
        self.assertEqual(stray_children(), [])

    def test_two_sockets_are_refused(self):
        a = Activated(self, ["--config", self.config], sockets=2)
        knock(a.ports[0])
        code, err = a.wait()
        self.assertEqual(code, 2, err)
        self.assertIn("exactly one listening TCP socket", err)

    def test_http_flag_beside_a_passed_socket_is_refused(self):
        a = Activated(self, ["--config", self.config, "--http", "127.0.0.1:0"])
        knock(a.ports[0])
        code, err = a.wait()
        self.assertEqual(code, 2, err)
        self.assertIn("--http: systemd passed a socket", err)


class InheritedVariables(unittest.TestCase):
    def test_listen_fds_of_another_process_are_ignored(self):
        """LISTEN_PID names the process the sockets are for; a parent's, inherited, is not ours:
        serve stays on stdio and never touches fd 3."""
        d = tempdir(self)
        config = write_config(d, [{"name": "ruby", "language": "ruby", "pool": 0}])
        env = dict(os.environ, LISTEN_PID="1", LISTEN_FDS="1")
        r = subprocess.run([BIN, "serve", "--config", config], input=json.dumps(INIT) + "\n",
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("on stdio", r.stderr)
        self.assertEqual(json.loads(r.stdout)["result"]["serverInfo"]["name"], "codecell")


@unittest.skipUnless(ACTIVATE, "systemd-socket-activate is not installed (package systemd)")
class ActivatedDrain(unittest.TestCase):
    def test_a_drain_leaves_systemds_socket_listening(self):
        """SIGTERM drains a socket-activated server too, but the socket is systemd's: it stops
        accepting from it without shutting it down, so new connections wait there for the
        service's next start instead of being refused."""
        import http.client
        import threading
        d = tempdir(self)
        gate = os.path.join(d, "gate")
        os.makedirs(gate)
        os.chmod(gate, 0o777)
        config = write_config(d, [{"name": "ruby", "language": "ruby", "pool": 1,
                                   "limits": {"timeout_ms": 60000, "cpu_ms": 20000},
                                   "mounts": [{"source": gate, "dest": "/gate", "mode": "rw"}]}])
        a = Activated(self, ["--config", config, "--drain-timeout", "60s"])
        port = a.ports[0]
        status, session, text = post(port, INIT)
        self.assertEqual(status, 200, text)
        kept = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

        def metrics():
            kept.request("GET", "/metrics", headers={"Host": f"127.0.0.1:{port}"})
            return kept.getresponse().read().decode()
        answer = {}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "ruby", "arguments": {
                    "code": 'until File.exist?("/gate/open"); sleep 0.05; end; 42'}}}
        t = threading.Thread(target=lambda: answer.update(r=post(port, call, session)))
        t.start()
        deadline = time.monotonic() + 60
        while "codecell_runs_in_progress 1" not in metrics():
            self.assertLess(time.monotonic(), deadline, "the call did not start")
            time.sleep(0.05)
        a.proc.send_signal(signal.SIGTERM)
        while "codecell_draining 1" not in metrics():
            self.assertLess(time.monotonic(), deadline, "the drain did not begin")
            time.sleep(0.05)
        # Still listening (the kernel completes the handshake), though not accepted from now.
        socket.create_connection(("127.0.0.1", port), timeout=30).close()
        kept.close()
        open(os.path.join(gate, "open"), "w").close()
        t.join(60)
        status, _, text = answer["r"]
        self.assertEqual((status, json.loads(text)["result"]["structuredContent"]["value"]),
                         (200, 42), text)
        code, err = a.wait()
        self.assertEqual(code, 0, err)


@unittest.skipUnless(shutil.which("systemd-analyze"), "systemd-analyze is not installed")
class Units(unittest.TestCase):
    def test_units_verify(self):
        """The units as installed (the binary's path filled in) pass systemd-analyze verify."""
        d = tempdir(self)
        for name in ("codecell.service", "codecell.socket"):
            with open(os.path.join(ROOT, "packaging", "systemd", name + ".in")) as f:
                text = f.read().replace("@CODECELL_BINDIR@", os.path.dirname(os.path.abspath(BIN)))
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        r = subprocess.run(["systemd-analyze", "verify", "--man=no",
                            os.path.join(d, "codecell.socket"), os.path.join(d, "codecell.service")],
                           capture_output=True, text=True, timeout=120)
        # Without a running systemd, verify still parses every line and names unknown keys.
        problems = [line for line in r.stderr.splitlines()
                    if re.search(r"codecell\.(service|socket)", line)]
        self.assertEqual(problems, [], r.stderr)

    def test_instance_template_verifies(self):
        """codecell@.service, the unit of one instance of several (docs/scaling.md), verifies
        as an instance (codecell@a.service) and names it and its address."""
        d = tempdir(self)
        with open(os.path.join(ROOT, "packaging", "systemd", "codecell@.service.in")) as f:
            text = f.read().replace("@CODECELL_BINDIR@", os.path.dirname(os.path.abspath(BIN)))
        with open(os.path.join(d, "codecell@.service"), "w") as f:
            f.write(text)
        self.assertIn("--instance %i", text)
        self.assertIn("--http ${CODECELL_LISTEN}", text)
        r = subprocess.run(["systemd-analyze", "verify", "--man=no",
                            os.path.join(d, "codecell@a.service")],
                           capture_output=True, text=True, timeout=120)
        problems = [line for line in r.stderr.splitlines() if "codecell@" in line]
        self.assertEqual(problems, [], r.stderr)


if __name__ == "__main__":
    unittest.main()
