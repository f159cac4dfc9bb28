"""packaging/kubernetes/: what can be checked without a cluster (none runs here, and kubectl's
client-side dry run asks an API server for its resource types, so Debian's kubernetes-client
cannot check the manifests offline either: docs/operations.md says what was and was not run).

- The manifests' structure: the fields the pod needs, with values that agree with each other
  (the drain fits in the grace period, liveness outlasts a drain, the probes' port exists).
- The container's own command line, run here for real: codecell serve with exactly the args
  of the StatefulSet (the pod's name and address filled in as the kubelet does), answering
  /healthz to a probe that carries the Host a kubelet sends, naming its sessions after the pod,
  and draining on SIGTERM as the probes expect.
- The proxy's nginx configuration: the shipped packaging/nginx/codecell.conf renamed for the
  pods, and accepted by Debian's nginx (nginx -t).
- The Localhost seccomp profile: applied to codecell with libseccomp, as a container runtime
  would, every required layer of codecell check is still there and a run works."""
import ctypes
import ctypes.util
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

import yaml

from harness import BIN

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
K8S = os.path.join(ROOT, "packaging", "kubernetes")


def load(name):
    with open(os.path.join(K8S, name)) as f:
        return {d["kind"]: d for d in yaml.safe_load_all(f)}


def duration_s(text):
    m = re.fullmatch(r"(\d+)(ms|s|m)", text)
    return int(m[1]) * {"ms": 0.001, "s": 1, "m": 60}[m[2]]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Manifests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.docs = load("codecell.yaml")
        cls.sts = cls.docs["StatefulSet"]
        cls.pod = cls.sts["spec"]["template"]["spec"]
        cls.container = cls.pod["containers"][0]

    def arg(self, flag):
        args = self.container["args"]
        return args[args.index(flag) + 1]

    def test_the_pod_settings_a_sandbox_needs(self):
        self.assertIs(self.pod["hostUsers"], False)
        profile = self.pod["securityContext"]["seccompProfile"]
        self.assertEqual(profile["type"], "Localhost")
        self.assertTrue(os.path.exists(os.path.join(K8S, os.path.basename(
            profile["localhostProfile"]))), profile)
        sc = self.container["securityContext"]
        self.assertEqual(sc["procMount"], "Unmasked")
        self.assertEqual(sc["appArmorProfile"]["type"], "Unconfined")
        self.assertEqual(sc["capabilities"]["drop"], ["ALL"])
        self.assertTrue(self.pod["securityContext"]["runAsNonRoot"])
        self.assertIn("memory", self.container["resources"]["limits"])
        self.assertIn("cpu", self.container["resources"]["requests"])

    def test_probes_and_the_drain_agree(self):
        ports = {p["name"] for p in self.container["ports"]}
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            get = self.container[probe]["httpGet"]
            self.assertEqual(get["path"], "/healthz")
            self.assertIn(get["port"], ports)
        drain = duration_s(self.arg("--drain-timeout"))
        pre_stop = int(self.container["lifecycle"]["preStop"]["exec"]["command"][1])
        grace = self.pod["terminationGracePeriodSeconds"]
        self.assertGreater(grace, pre_stop + drain, "SIGKILL would cut the drain short")
        live = self.container["livenessProbe"]
        self.assertGreater(live["periodSeconds"] * live["failureThreshold"], pre_stop + drain,
                           "a drain (its listener closed) would look like a dead server")
        self.assertEqual(self.container["readinessProbe"]["failureThreshold"], 1)

    def test_the_headless_service_names_the_pods_the_proxy_routes_to(self):
        svc = self.docs["Service"]
        self.assertEqual(svc["spec"]["clusterIP"], "None")
        self.assertEqual(self.sts["spec"]["serviceName"], svc["metadata"]["name"])
        self.assertEqual(svc["spec"]["selector"], self.sts["spec"]["selector"]["matchLabels"])
        self.assertEqual(self.sts["spec"]["template"]["metadata"]["labels"],
                         self.sts["spec"]["selector"]["matchLabels"])
        conf = load("proxy.yaml")["ConfigMap"]["data"]["codecell.conf"]
        name = self.sts["metadata"]["name"]
        for i in range(self.sts["spec"]["replicas"]):
            pod = f"{name}-{i}"
            self.assertIn(f"~^{pod}\\.", conf)
            self.assertIn(f"~^cs_{pod}\\.", conf)
            self.assertIn(f"server {pod}.{svc['metadata']['name']}:8080", conf)
        self.assertEqual(self.arg("--instance"), "$(POD_NAME)")
        self.assertEqual(self.docs["ConfigMap"]["metadata"]["name"],
                         self.pod["volumes"][0]["configMap"]["name"])


class ProxyConfiguration(unittest.TestCase):
    def conf(self):
        return load("proxy.yaml")["ConfigMap"]["data"]["codecell.conf"]

    def test_it_is_the_shipped_configuration_renamed_for_the_pods(self):
        with open(os.path.join(ROOT, "packaging", "nginx", "codecell.conf")) as f:
            lines = f.read().splitlines()
        while lines[0].startswith("#"):
            lines.pop(0)
        text = "\n".join(lines).strip("\n") + "\n"
        for n, (letter, port) in enumerate([("a", "8101"), ("b", "8102"), ("c", "8103")]):
            text = text.replace(f"127.0.0.1:{port}", f"codecell-{n}.codecell:8080")
            text = re.sub(rf"\bcodecell_{letter}\b", f"codecell_{n}", text)
            text = text.replace(f"~^{letter}\\.", f"~^codecell-{n}\\.")
            text = text.replace(f"~^cs_{letter}\\.", f"~^cs_codecell-{n}\\.")
        text = text.replace("listen 127.0.0.1:8080;", "listen 8080;")
        self.assertEqual(self.conf(), text)

    def test_nginx_accepts_it(self):
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        if not os.access(nginx, os.X_OK):
            self.skipTest("no nginx (scripts/bootstrap installs it)")
        d = tempfile.mkdtemp(prefix="codecell-k8s-nginx-")
        self.addCleanup(shutil.rmtree, d, True)
        # No cluster DNS here: the pods' names become this host's address.
        conf = re.sub(r"codecell-\d\.codecell", "127.0.0.1", self.conf())
        conf = conf.replace("listen 8080;", f"listen 127.0.0.1:{free_port()};")
        with open(os.path.join(d, "codecell.conf"), "w") as f:
            f.write(conf)
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(f"pid {d}/nginx.pid;\nerror_log stderr;\nevents {{}}\nhttp {{\n"
                    f"client_body_temp_path {d}/body;\nproxy_temp_path {d}/proxy;\n"
                    f"access_log off;\ninclude {d}/codecell.conf;\n}}\n")
        p = subprocess.run([nginx, "-t", "-p", d, "-c", os.path.join(d, "nginx.conf")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)


class TheContainersCommand(unittest.TestCase):
    """The StatefulSet's command line, as the kubelet would start it in codecell-1."""

    def start(self):
        docs = load("codecell.yaml")
        container = docs["StatefulSet"]["spec"]["template"]["spec"]["containers"][0]
        d = tempfile.mkdtemp(prefix="codecell-k8s-")
        self.addCleanup(shutil.rmtree, d, True)
        with open(os.path.join(d, "cells.json"), "w") as f:
            f.write(docs["ConfigMap"]["data"]["cells.json"])
        self.port = free_port()
        self.pod_ip = "10.244.1.7"
        env = {"POD_NAME": "codecell-1", "POD_IP": self.pod_ip}
        args = []
        for a in container["args"]:
            a = re.sub(r"\$\((\w+)\)", lambda m: env[m[1]], a)  # as the kubelet expands them
            a = a.replace("/etc/codecell/cells.json", os.path.join(d, "cells.json"))
            args.append(a.replace(":8080", f":{self.port}"))
        self.assertEqual(container["command"], ["codecell"])
        self.proc = subprocess.Popen([BIN, *args], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: self.proc.poll() is not None or self.proc.kill())
        self.addCleanup(lambda: self.proc.stdout.close() or self.proc.stderr.close())
        # The startup probe: the port opens once the pools are warm.
        deadline = time.monotonic() + 120
        while self.get_healthz() is None:
            self.assertIsNone(self.proc.poll(), self.proc.stderr.read() if self.proc.poll()
                              is not None else "")
            self.assertLess(time.monotonic(), deadline, "codecell serve never listened")
            time.sleep(0.1)

    def request(self, method, path, host, body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            h = {"Host": host}
            h.update(headers or {})
            conn.request(method, path, body=body, headers=h)
            r = conn.getresponse()
            return r.status, dict(r.getheaders()), r.read().decode()
        finally:
            conn.close()

    def get_healthz(self, host=None):
        """A kubelet's httpGet probe: Host is the pod's address and port. None: refused."""
        try:
            return self.request("GET", "/healthz", host or f"{self.pod_ip}:{self.port}")[:3:2]
        except (ConnectionRefusedError, ConnectionResetError, http.client.RemoteDisconnected):
            return None

    def test_probes_sessions_and_drain(self):
        self.start()
        self.assertEqual(self.get_healthz(), (200, "ok\n"))
        # Without --allow-host $(POD_IP):8080 the probe would be refused (DNS rebinding guard).
        self.assertEqual(self.get_healthz(f"10.9.9.9:{self.port}")[0], 403)
        # Clients come through the proxy with their own Host.
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "k8s-test", "version": "1"}}}
        status, headers, text = self.request(
            "POST", "/mcp", "codecell.example.com", json.dumps(init),
            {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        self.assertEqual(status, 200, text)
        sid = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
        # The proxy's map sends "codecell-1." ids to the pod codecell-1.
        self.assertRegex(sid, r"^codecell-1\.[0-9a-f]{32}$")
        # SIGTERM (after preStop): the listener closes, so readiness fails at once.
        self.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 60
        while self.get_healthz() is not None:
            self.assertLess(time.monotonic(), deadline, "still ready after SIGTERM")
            time.sleep(0.05)
        self.assertEqual(self.proc.wait(timeout=60), 0)


def libseccomp():
    name = ctypes.util.find_library("seccomp")
    return ctypes.CDLL(name, use_errno=True) if name else None


class SeccompProfile(unittest.TestCase):
    def profile(self):
        with open(os.path.join(K8S, "seccomp-codecell.json")) as f:
            return json.load(f)

    def test_it_refuses_nothing_codecell_needs(self):
        p = self.profile()
        self.assertEqual(p["defaultAction"], "SCMP_ACT_ALLOW")
        denied = {n for rule in p["syscalls"] for n in rule["names"]}
        needed = {"unshare", "clone", "clone3", "setns", "mount", "umount2", "pivot_root",
                  "open_tree", "move_mount", "mount_setattr", "fsopen", "fsconfig", "fsmount",
                  "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
                  "seccomp", "prctl", "memfd_create", "execve", "execveat", "socketpair"}
        self.assertEqual(denied & needed, set())

    def test_codecell_works_under_it(self):
        lib = libseccomp()
        if lib is None:
            self.skipTest("no libseccomp")
        p = self.profile()
        lib.seccomp_init.restype = ctypes.c_void_p
        lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
        lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                         ctypes.c_uint]
        lib.seccomp_load.argtypes = [ctypes.c_void_p]
        names = [n for rule in p["syscalls"] for n in rule["names"]]

        def apply():
            # As a runtime does: the listed calls refused with errnoRet, the rest allowed.
            ctx = lib.seccomp_init(0x7FFF0000)
            for n in names:
                nr = lib.seccomp_syscall_resolve_name(n.encode())
                if nr >= 0 and lib.seccomp_rule_add(ctx, 0x00050000 | 1, nr, 0) < 0:
                    os._exit(98)
            if lib.seccomp_load(ctx) < 0:
                os._exit(99)

        # LeakSanitizer (a sanitizer build of codecell) stops the process's threads with
        # ptrace, which the profile refuses as a runtime would: its leak check is for the
        # suite's other runs, not this one.
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:" + os.environ.get("ASAN_OPTIONS", ""))
        # As the pod runs it (uid 10001, runAsNonRoot) when this test may become that uid.
        users = [()]
        if os.geteuid() == 0 and shutil.which("setpriv"):
            users.append(("setpriv", "--reuid=10001", "--regid=10001", "--clear-groups"))
        for user in users:
            check = subprocess.run([*user, BIN, "check", "--json"], capture_output=True,
                                   text=True, timeout=300, preexec_fn=apply, env=env)
            self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
            for layer in json.loads(check.stdout)["layers"]:
                if layer["required"]:
                    self.assertTrue(layer["available"], (user, layer))
        run = subprocess.run([BIN, "run", "--json", "--lang", "python", "-e", "6 * 7"],
                             capture_output=True, text=True, timeout=300, preexec_fn=apply,
                             env=env)
        self.assertEqual(json.loads(run.stdout)["status"], "ok", run.stdout + run.stderr)
        self.assertIn("42", run.stdout)


if __name__ == "__main__":
    unittest.main()
