"""codecell in a container, for real (make test-containers; docs/operations.md, "In a
container"): Docker (dockerd from Debian's docker.io) and Podman (Debian's podman), rootful, and
Podman rootless as a normal user, each on an image imported from a Debian root made with
debootstrap (scripts/containers/image.sh: no registry). Each engine is started with state of its
own under a temporary folder and stopped at the end, with everything it made.

Inside, as the documented recipe says: a non-root user, the shipped seccomp profile
(packaging/kubernetes/seccomp-codecell.json, not `unconfined`), AppArmor unconfined where the
host has AppArmor, an unmasked /proc, no network. `codecell check` must show every required
layer, a run must hold its memory and time limits; and with the engine's defaults check must say
what is missing and which flag fixes it."""
import json
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("CODECELL_BUILD") or os.path.join(REPO, "build")
PROFILE = os.path.join(REPO, "packaging", "kubernetes", "seccomp-codecell.json")
IMAGE = "codecell-test:local"
NOBODY = "65534:65534"
MEMORY = 'x = "a" * (200 << 20); x.size'


def sh(*args, check=True, timeout=600, **kw):
    return subprocess.run(list(args), capture_output=True, text=True, check=check,
                          timeout=timeout, **kw)


def image_tar():
    """The image's root as a tarball, made (or taken from the cache) once per run."""
    if not hasattr(image_tar, "path"):
        r = sh(os.path.join(REPO, "scripts", "containers", "image.sh"), BUILD, check=False,
               timeout=1800)
        if r.returncode != 0:
            raise unittest.SkipTest(f"no image root (debootstrap failed): {r.stderr[-500:]}")
        image_tar.path = r.stdout.strip()
    return image_tar.path


def check_lines(text):
    """`codecell check`'s table: {layer: (yes|MISSING, the rest)}."""
    out = {}
    for line in text.splitlines():
        parts = line.split(None, 2)
        if len(parts) >= 2 and parts[1] in ("yes", "MISSING"):
            out[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else "")
    return out


def apparmor_on():
    try:
        with open("/sys/module/apparmor/parameters/enabled") as f:
            return f.read().strip() == "Y"
    except OSError:
        return False


class EngineCase:
    """What every container engine must give: the recipe works, the defaults are explained."""

    def recipe(self):
        flags = ["--user", NOBODY, "--network", "none",
                 "--security-opt", f"seccomp={PROFILE}"]
        if apparmor_on():
            flags += ["--security-opt", "apparmor=unconfined"]
        return flags + self.unmasked_proc

    def test_check_in_the_recipe(self):
        r = self.run_in(self.recipe(), "codecell", "check")
        layers = check_lines(r.stdout)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for layer in ("user_namespace", "mount_namespace", "pid_namespace", "network_namespace",
                      "fresh_proc", "seccomp", "landlock", "forked_sandboxes"):
            self.assertEqual(layers.get(layer, ("absent",))[0], "yes", r.stdout)
        print(r.stdout)

    def test_limits_hold_in_the_recipe(self):
        r = self.run_in(self.recipe(), "codecell", "run", "--json", "--memory", "64M",
                        "-e", MEMORY)
        result = json.loads(r.stdout)
        self.assertEqual(result["status"], "memory_limit", result)
        r = self.run_in(self.recipe(), "codecell", "run", "--json", "--timeout", "2s",
                        "-e", "sleep 60")
        result = json.loads(r.stdout)
        self.assertEqual(result["status"], "timeout", result)
        r = self.run_in(self.recipe(), "codecell", "run", "--json", "--lang", "python",
                        "--start", "fork", "-e", "6 * 7")
        result = json.loads(r.stdout)
        self.assertEqual((result["status"], result["value"]), ("ok", 42), result)

    def test_defaults_are_explained(self):
        # The engine's defaults (its seccomp profile, a masked /proc): no sandbox could start,
        # and check says which layer is missing, why, and the flag that fixes it. Docker's
        # default profile refuses unshare; rootless Podman's lets it be and masks /proc.
        r = self.run_in(["--user", NOBODY, "--network", "none"],
                        "codecell", "check")
        layers = check_lines(r.stdout)
        self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
        missing = {k: text for k, (state, text) in layers.items() if state == "MISSING"}
        self.assertTrue(missing.keys() & {"user_namespace", "fresh_proc"}, r.stdout)
        for layer, text in missing.items():
            self.assertIn("Fix:", text, layer)
        self.assertTrue(any("seccomp" in t or self.unmasked_proc[-1] in t
                            for t in missing.values()), r.stdout)

    def test_masked_proc_is_explained(self):
        # The profile but the engine's masked /proc: check names the layer and the flag (and
        # exits 4: no sandbox could start).
        flags = self.recipe()[:-len(self.unmasked_proc)]
        r = self.run_in(flags, "codecell", "check")
        layers = check_lines(r.stdout)
        self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
        state, text = layers.get("fresh_proc", ("absent", ""))
        self.assertEqual(state, "MISSING", r.stdout)
        self.assertIn(self.unmasked_proc[-1], text)
        r = self.run_in(flags, "codecell", "run", "--json", "-e", "1 + 1")
        self.assertEqual(json.loads(r.stdout)["status"], "sandbox_error", r.stdout)


class Docker(EngineCase, unittest.TestCase):
    unmasked_proc = ["--security-opt", "systempaths=unconfined"]

    @classmethod
    def setUpClass(cls):
        if shutil.which("dockerd") is None or shutil.which("docker") is None:
            raise unittest.SkipTest("no dockerd (scripts/bootstrap --containers installs docker.io)")
        tar = image_tar()
        cls.state = tempfile.mkdtemp(prefix="codecell-docker-")
        cls.sock = f"unix://{cls.state}/docker.sock"
        cls.log = open(os.path.join(cls.state, "dockerd.log"), "w")
        # State of its own, no bridge and no iptables rules: nothing of the host is changed.
        cls.daemon = subprocess.Popen(
            ["dockerd", "--data-root", f"{cls.state}/data", "--exec-root", f"{cls.state}/exec",
             "-H", cls.sock, "--pidfile", f"{cls.state}/docker.pid", "--iptables=false",
             "--ip6tables=false", "--bridge=none"], stdout=cls.log, stderr=subprocess.STDOUT)
        until = time.monotonic() + 120
        while sh("docker", "-H", cls.sock, "info", check=False).returncode != 0:
            if cls.daemon.poll() is not None or time.monotonic() > until:
                cls.tearDownClass()
                raise AssertionError("dockerd did not start: " + open(cls.log.name).read()[-2000:])
            time.sleep(0.5)
        sh("docker", "-H", cls.sock, "import", tar, IMAGE)

    @classmethod
    def tearDownClass(cls):
        if cls.daemon.poll() is None:
            cls.daemon.send_signal(signal.SIGTERM)
            try:
                cls.daemon.wait(timeout=120)
            except subprocess.TimeoutExpired:
                cls.daemon.kill()
                cls.daemon.wait()
        cls.log.close()
        # Its layers are mounts under the data root until dockerd ends; then plain folders.
        shutil.rmtree(cls.state, ignore_errors=True)

    def run_in(self, flags, *command):
        return sh("docker", "-H", self.sock, "run", "--rm", *flags, IMAGE, *command, check=False)


class Podman(EngineCase, unittest.TestCase):
    unmasked_proc = ["--security-opt", "unmask=ALL"]
    user = None  # rootful

    @classmethod
    def setUpClass(cls):
        if shutil.which("podman") is None:
            raise unittest.SkipTest("no podman (scripts/bootstrap --containers installs it)")
        tar = image_tar()
        cls.state = tempfile.mkdtemp(prefix="codecell-podman-")
        os.chmod(cls.state, 0o755)
        cls.env = {"PATH": os.environ["PATH"], "HOME": cls.state,
                   "XDG_RUNTIME_DIR": f"{cls.state}/run", "XDG_CONFIG_HOME": f"{cls.state}/config"}
        os.makedirs(f"{cls.state}/run", mode=0o700)
        cls.base = ["podman", "--root", f"{cls.state}/storage", "--runroot", f"{cls.state}/run",
                    "--cgroup-manager", "cgroupfs", "--events-backend", "none"]
        if cls.user:
            cls.prepare_user()
        r = cls.podman("import", tar, IMAGE)
        if r.returncode != 0:
            cls.tearDownClass()
            raise AssertionError(f"podman import failed: {r.stderr[-2000:]}")
        # Rootful Podman's runc sets the container's rlimits (nofile, nproc) above the host's
        # where root may not raise them (a root without CAP_SYS_RESOURCE, as on this kind of
        # machine): no container starts at all, codecell or not.
        r = cls.podman("run", "--rm", "--network", "none", IMAGE, "true")
        if r.returncode != 0 and "error setting rlimit" in r.stderr:
            cls.tearDownClass()
            raise unittest.SkipTest("this host's root may not raise rlimits, which rootful "
                                    f"Podman's runc sets for every container: {r.stderr.strip()}")

    @classmethod
    def podman(cls, *args):
        prefix = []
        if cls.user:
            prefix = ["setpriv", f"--reuid={cls.uid}", f"--regid={cls.uid}", "--init-groups"]
        return sh(*prefix, *cls.base, *args, env=cls.env, check=False)

    @classmethod
    def tearDownClass(cls):
        # podman's overlay layers are mounts of its own; unshare lets a rootless one remove them.
        if cls.user:
            sh("setpriv", f"--reuid={cls.uid}", f"--regid={cls.uid}", "--init-groups",
               "podman", "unshare", "rm", "-rf", f"{cls.state}/storage", env=cls.env, check=False)
            # It leaves a pause process holding its user namespace: ended by its pid.
            try:
                with open(f"{cls.state}/run/libpod/tmp/pause.pid") as f:
                    os.kill(int(f.read().strip()), signal.SIGKILL)
            except (OSError, ValueError):
                pass
        else:
            cls.podman("system", "reset", "--force")
        shutil.rmtree(cls.state, ignore_errors=True)

    def run_in(self, flags, *command):
        return self.podman("run", "--rm", *flags, IMAGE, *command)



class PodmanRootless(Podman):
    """Rootless Podman as a normal user of the host: its container is a user namespace already,
    and codecell's nest inside it."""
    user = "cclane-podman"

    @classmethod
    def prepare_user(cls):
        # A user of the test's own, removed at the end; useradd gives it a subordinate id range
        # (/etc/subuid, /etc/subgid) for the image's files, and userdel takes it back.
        if shutil.which("newuidmap") is None:
            raise unittest.SkipTest("no newuidmap (the uidmap package)")
        if sh("id", cls.user, check=False).returncode != 0:
            sh("useradd", "--no-create-home", "--home-dir", cls.state, "--shell", "/bin/sh",
               cls.user)
            cls.made_user = True
        cls.uid = pwd.getpwnam(cls.user).pw_uid
        with open("/etc/subuid") as f:
            if not any(line.startswith(cls.user + ":") for line in f):
                raise unittest.SkipTest(f"useradd gave {cls.user} no /etc/subuid range")
        for d in (cls.state, f"{cls.state}/run"):
            os.chown(d, cls.uid, cls.uid)
        os.chmod(PROFILE, os.stat(PROFILE).st_mode | 0o444)

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        if getattr(cls, "made_user", False):
            r = sh("userdel", cls.user, check=False)
            if r.returncode != 0:
                raise AssertionError(f"userdel {cls.user}: {r.stderr}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
