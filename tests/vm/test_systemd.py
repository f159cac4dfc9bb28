"""codecell under systemd on a live cgroup v2 kernel (the systemd VM lane: scripts/vm/init boots
the host's systemd as PID 1, scripts/vm/systemd-guest.sh runs this module in it as root).

The shipped units, from packaging/systemd/*.in: codecell.socket started, a client connects, and
the service's sandboxes get memory cgroups of their own beside the engine's leaf
(`…/codecell.service/engine`, Delegate=yes), seen from systemd's side; then the same through a
user's own systemd (`systemd --user`, a unit with Delegate=yes)."""
import http.client
import json
import os
import pwd
import shutil
import subprocess
import time
import unittest

LANE = os.path.dirname(os.path.abspath(__file__))
REPO = os.environ["CODECELL_REPO"]
SLOWDOWN = float(os.environ.get("CODECELL_SLOWDOWN", "1"))
# The service's binary where its DynamicUser can read it: /tmp is private to the unit.
BINDIR = "/usr/local/lib/codecell-vm"
BIN = os.path.join(BINDIR, "codecell")
CGROOT = "/sys/fs/cgroup"
SERVICE_CG = f"{CGROOT}/system.slice/codecell.service"
MIB = 1 << 20


def deadline(seconds):
    return time.monotonic() + seconds * SLOWDOWN


def sh(*args, check=True, **kw):
    return subprocess.run(list(args), capture_output=True, text=True, check=check, **kw)


def unit_text(name):
    with open(os.path.join(REPO, "packaging/systemd", name + ".in")) as f:
        return f.read().replace("@CODECELL_BINDIR@", BINDIR)


def tools_call(port, code, i=1):
    """A 2026-07-28 tools/call of the cell "ruby" over HTTP: its structuredContent."""
    message = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
               "params": {"name": "ruby", "arguments": {"code": code},
                          "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                    "io.modelcontextprotocol/clientCapabilities": {},
                                    "io.modelcontextprotocol/clientInfo":
                                        {"name": "systemd-lane", "version": "1"}}}}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30 * SLOWDOWN)
    try:
        conn.request("POST", "/mcp", body=json.dumps(message), headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "ruby"})
        r = conn.getresponse()
        text = r.read().decode()
    finally:
        conn.close()
    if r.status != 200:
        raise AssertionError(f"HTTP {r.status}: {text}")
    for line in text.splitlines():  # an SSE stream or one JSON body
        if line.startswith("data: "):
            text = line[len("data: "):]
    return json.loads(text)["result"]["structuredContent"]


def main_pid():
    out = sh("systemctl", "show", "-p", "MainPID", "--value", "codecell.service").stdout
    return int(out.strip())


def journal():
    """What codecell.service said."""
    return sh("journalctl", "--no-pager", "-o", "cat", "-u", "codecell.service",
              check=False).stdout[-6000:]


def sandbox_cgroups(parent):
    return sorted(e for e in os.listdir(parent) if e.startswith("codecell-"))


class SystemService(unittest.TestCase):
    """codecell.socket and codecell.service as shipped, on port 8080 of the VM's loopback."""

    @classmethod
    def setUpClass(cls):
        os.makedirs(BINDIR, exist_ok=True)
        shutil.copy(os.path.join(LANE, "codecell"), BIN)
        os.chmod(BIN, 0o755)
        os.makedirs("/etc/codecell", exist_ok=True)
        with open("/etc/codecell/cells.json", "w") as f:
            json.dump({"cells": [{"name": "ruby", "language": "ruby", "pool": 1,
                                  "limits": {"timeout_ms": int(60000 * SLOWDOWN),
                                             "cpu_ms": int(30000 * SLOWDOWN),
                                             "memory_bytes": 64 * MIB}}]}, f)
        for name in ("codecell.service", "codecell.socket"):
            with open(f"/etc/systemd/system/{name}", "w") as f:
                f.write(unit_text(name))
        sh("systemctl", "daemon-reload")
        sh("systemctl", "start", "codecell.socket")
        # Started by hand first, so that a service that cannot start says why at once (the
        # socket would otherwise restart it at every connection).
        started = sh("systemctl", "start", "codecell.service", check=False)
        if started.returncode != 0:
            raise AssertionError("codecell.service did not start:\n" + journal())

    @classmethod
    def tearDownClass(cls):
        print(journal())  # for the lane's log
        sh("systemctl", "stop", "codecell.service", "codecell.socket", check=False)

    def test_sandboxes_get_cgroups_beside_the_engines_leaf(self):
        # The first connection starts the service; its first answer comes once it runs.
        r = tools_call(8080, "1 + 1")
        self.assertEqual(r["status"], "ok", r)
        self.assertEqual(r["value"], 2)
        pid = main_pid()
        self.assertGreater(pid, 0)
        # systemd's own view: the unit's cgroup, the engine in its leaf.
        control = sh("systemctl", "show", "-p", "ControlGroup", "--value", "codecell.service")
        self.assertEqual(control.stdout.strip(), "/system.slice/codecell.service")
        with open(f"/proc/{pid}/cgroup") as f:
            self.assertEqual(f.read().strip(), "0::/system.slice/codecell.service/engine")
        with open(f"{SERVICE_CG}/cgroup.subtree_control") as f:
            self.assertTrue({"memory", "pids"} <= set(f.read().split()))
        # The standby waiting for the next run is a sandbox of its own, with the cell's limit.
        until = deadline(60)
        while not sandbox_cgroups(SERVICE_CG):
            self.assertLess(time.monotonic(), until, os.listdir(SERVICE_CG))
            time.sleep(0.2)
        sandbox = f"{SERVICE_CG}/{sandbox_cgroups(SERVICE_CG)[0]}"
        with open(f"{sandbox}/memory.max") as f:
            self.assertEqual(int(f.read()), 64 * MIB)
        tree = sh("systemd-cgls", "--no-pager", "-u", "codecell.service").stdout
        self.assertIn("engine", tree)
        self.assertIn(os.path.basename(sandbox), tree)
        print(tree)

    def test_memory_limit_in_the_service(self):
        tools_call(8080, "1 + 1", i=2)  # the service is up
        before = main_pid()
        r = tools_call(8080, 'x = "a" * (200 << 20); x.size', i=3)
        self.assertEqual(r["status"], "memory_limit", r)
        # The cgroup's own peak: the kernel's count, at the limit.
        self.assertGreaterEqual(r["memory_peak_bytes"], 60 * MIB, r)
        self.assertLessEqual(r["memory_peak_bytes"], 64 * MIB, r)
        # systemd sees the kernel's OOM kill in the unit's subtree; with its default
        # OOMPolicy=stop it would stop the service, and every client with it.
        until = deadline(30)
        while "killed by the OOM killer" not in journal():
            self.assertLess(time.monotonic(), until, journal())
            time.sleep(0.2)
        # systemd queues the stop as it logs the kill: by now the unit would be deactivating.
        state = sh("systemctl", "is-active", "codecell.service", check=False).stdout.strip()
        self.assertEqual(state, "active", journal())
        self.assertEqual(main_pid(), before, journal())
        self.assertEqual(tools_call(8080, "6 * 7", i=4)["value"], 42)

    def test_check_in_a_unit_like_the_service(self):
        # codecell check as the service runs: a transient unit with its Delegate= and user.
        out = sh("systemd-run", "--wait", "--pipe", "--quiet", "-p", "Delegate=yes",
                 "-p", "DynamicUser=yes", BIN, "check", check=False).stdout
        line = next((l for l in out.splitlines() if l.split()[:1] == ["cgroup"]), "")
        self.assertRegex(line, r"^cgroup\s+yes\s+cgroup_v2 under /sys/fs/cgroup/system\.slice/"
                               r"run-\S+\.service$", out)

    def test_a_cgroup_not_delegated_is_left_alone(self):
        # The same check in a unit without Delegate=: its process is not moved, and check says
        # why the layer is missing, with the fix.
        out = sh("systemd-run", "--wait", "--pipe", "--quiet", "-p", "DynamicUser=yes",
                 BIN, "check", check=False).stdout
        line = next((l for l in out.splitlines() if l.split()[:1] == ["cgroup"]), "")
        self.assertIn("MISSING", line, out)
        self.assertIn("was not delegated to codecell", line, out)
        self.assertIn("Delegate=yes", line, out)


class UserService(unittest.TestCase):
    """A user's own systemd: `systemd --user` (user@UID.service, which systemd delegates memory
    and pids to), then a user unit with Delegate=yes running codecell."""

    USER = "cclane"

    @classmethod
    def setUpClass(cls):
        if shutil.which("useradd") is None:
            raise unittest.SkipTest("no useradd in this root")
        sh("useradd", "--create-home", "--shell", "/bin/sh", cls.USER, check=False)
        cls.uid = pwd.getpwnam(cls.USER).pw_uid
        sh("systemctl", "start", f"user@{cls.uid}.service")
        cls.env = {"PATH": os.environ["PATH"], "HOME": f"/home/{cls.USER}",
                   "XDG_RUNTIME_DIR": f"/run/user/{cls.uid}"}

    @classmethod
    def tearDownClass(cls):
        sh("systemctl", "stop", f"user@{cls.uid}.service", check=False)

    def as_user(self, *args):
        return sh("setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--init-groups",
                  *args, env=self.env, check=False)

    def test_a_user_unit_with_delegate(self):
        # A run whose memory limit the kernel enforces through the user's own cgroup.
        r = self.as_user("systemd-run", "--user", "--wait", "--pipe", "--quiet",
                         "-p", "Delegate=yes", BIN, "run", "--memory", "64M", "--json",
                         "-e", 'x = "a" * (200 << 20); x.size')
        self.assertTrue(r.stdout.strip(), r.stderr)
        result = json.loads(r.stdout)
        self.assertEqual(result["status"], "memory_limit", result)
        self.assertGreaterEqual(result["memory_peak_bytes"], 60 * MIB, result)
        check = self.as_user("systemd-run", "--user", "--wait", "--pipe", "--quiet",
                             "-p", "Delegate=yes", BIN, "check").stdout
        line = next((l for l in check.splitlines() if l.split()[:1] == ["cgroup"]), "")
        self.assertRegex(line, rf"^cgroup\s+yes\s+cgroup_v2 under /sys/fs/cgroup/user\.slice/"
                               rf"user-{self.uid}\.slice/user@{self.uid}\.service/\S+$", check)


if __name__ == "__main__":
    unittest.main()
