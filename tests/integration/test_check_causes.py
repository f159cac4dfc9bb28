"""codecell check names, for every layer it finds missing, the cause on this host and the fix.

Each case makes layers missing for real, not through a setting of codecell's: a sysctl of
user namespaces at 0 in a fresh user namespace of its own (where its root may set them, for
the namespaces made inside), a seccomp filter put on codecell before it starts (as a
container's profile is), and running as nobody. Every MISSING line, in every case, must end in
a fix."""
import ctypes
import json
import os
import platform
import shutil
import struct
import subprocess
import sys
import unittest

from harness import BIN

UNSHARE = shutil.which("unshare")
SETPRIV = shutil.which("setpriv")

# This architecture's audit arch and call numbers (linux/audit.h, asm/unistd.h).
ARCH = {
    "x86_64": (0xC000003E, {"unshare": 272, "landlock_create_ruleset": 444}),
    "aarch64": (0xC00000B7, {"unshare": 97, "landlock_create_ruleset": 444}),
}.get(platform.machine())


def check_json(argv_prefix=(), preexec=None):
    """codecell check --json, started through argv_prefix: (exit code, {name: report})."""
    p = subprocess.run([*argv_prefix, BIN, "check", "--json"], capture_output=True, text=True,
                       timeout=300, stdin=subprocess.DEVNULL, preexec_fn=preexec)
    if not p.stdout.startswith("{"):
        raise AssertionError(f"no report: {p.stdout!r} {p.stderr!r}")
    return p.returncode, {r["name"]: r for r in json.loads(p.stdout)["layers"]}


def in_own_user_namespace(*sysctls):
    """A prefix that runs the command in a new user namespace (its root mapped to the caller)
    after writing 0 to each /proc/sys/user sysctl given."""
    writes = "; ".join(f"echo 0 > /proc/sys/user/{name}" for name in sysctls)
    return (UNSHARE, "--user", "--map-root-user", "sh", "-ec", writes + '; exec "$@"', "sh")


def refuse_with_seccomp(refusals):
    """A preexec that puts on this process, then codecell, a seccomp filter answering each
    call named in refusals (name -> errno) with that errno, and allowing everything else."""
    audit_arch, numbers = ARCH
    LD_ABS, JEQ, RET = 0x20, 0x15, 0x06
    insns = [(LD_ABS, 0, 0, 4), (JEQ, 1, 0, audit_arch), (RET, 0, 0, 0x7FFF0000),
             (LD_ABS, 0, 0, 0)]
    for name, errno_value in refusals.items():
        insns += [(JEQ, 0, 1, numbers[name]), (RET, 0, 0, 0x00050000 | errno_value)]
    insns.append((RET, 0, 0, 0x7FFF0000))
    code = b"".join(struct.pack("HBBI", *i) for i in insns)

    def apply():
        libc = ctypes.CDLL(None, use_errno=True)
        buf = ctypes.create_string_buffer(code, len(code))
        prog = struct.pack("HxxxxxxQ", len(insns), ctypes.addressof(buf))
        prog_buf = ctypes.create_string_buffer(prog, len(prog))
        PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
                libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog_buf, 0, 0) != 0:
            os._exit(99)
    return apply


class CheckCauses(unittest.TestCase):
    def assertEveryMissingHasAFix(self, reports):
        for name, r in reports.items():
            if not r["available"]:
                self.assertIn(". Fix: ", r["detail"], f"{name}: {r['detail']}")

    def test_every_layer_here_reports_and_missing_ones_have_fixes(self):
        code, reports = check_json()
        self.assertIn("user_namespace", reports)
        self.assertEveryMissingHasAFix(
            {n: r for n, r in reports.items() if n not in ("ruby", "python")})

    def own_user_namespace_or_skip(self):
        if not UNSHARE:
            self.skipTest("no unshare(1) (util-linux)")
        probe = subprocess.run([*in_own_user_namespace("max_user_namespaces"), "true"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            self.skipTest(f"no user namespace of our own to set its sysctls in: {probe.stderr}")

    def test_max_user_namespaces_zero(self):
        self.own_user_namespace_or_skip()
        code, reports = check_json(in_own_user_namespace("max_user_namespaces"))
        self.assertEqual(code, 4, "a required layer is missing: exit code 4")
        user = reports["user_namespace"]
        self.assertFalse(user["available"])
        self.assertIn("user.max_user_namespaces is 0", user["detail"])
        self.assertIn("Fix: sysctl -w user.max_user_namespaces=", user["detail"])
        self.assertIn("Fix: as for user_namespace", reports["network_namespace"]["detail"])
        self.assertFalse(reports["forked_sandboxes"]["available"])
        self.assertEveryMissingHasAFix(
            {n: r for n, r in reports.items() if n not in ("ruby", "python")})

    def test_max_net_and_mnt_namespaces_zero(self):
        self.own_user_namespace_or_skip()
        code, reports = check_json(
            in_own_user_namespace("max_net_namespaces", "max_mnt_namespaces"))
        self.assertEqual(code, 4)
        self.assertTrue(reports["user_namespace"]["available"])
        self.assertTrue(reports["pid_namespace"]["available"])
        for layer, kind in (("network_namespace", "net"), ("mount_namespace", "mnt")):
            self.assertFalse(reports[layer]["available"])
            self.assertIn(f"user.max_{kind}_namespaces is 0", reports[layer]["detail"])
            self.assertIn(f"Fix: sysctl -w user.max_{kind}_namespaces=", reports[layer]["detail"])

    def test_a_seccomp_filter_on_codecell(self):
        if not ARCH:
            self.skipTest(f"no call numbers for {platform.machine()} in this test")
        code, reports = check_json(preexec=refuse_with_seccomp(
            {"unshare": 1, "landlock_create_ruleset": 38}))  # EPERM, ENOSYS
        self.assertEqual(code, 4)
        user = reports["user_namespace"]
        self.assertFalse(user["available"])
        self.assertIn("seccomp filter on codecell itself", user["detail"])
        self.assertIn("Fix: a profile that allows it", user["detail"])
        landlock = reports["landlock"]
        self.assertFalse(landlock["available"])
        self.assertIn("landlock_create_ruleset refused by a seccomp filter", landlock["detail"])
        self.assertIn("Fix: as for landlock", reports["proc_paths_hidden"]["detail"])
        # seccomp itself still works under a filter: filters stack
        self.assertTrue(reports["seccomp"]["available"], reports["seccomp"]["detail"])
        self.assertEveryMissingHasAFix(
            {n: r for n, r in reports.items() if n not in ("ruby", "python")})

    def test_as_nobody(self):
        if os.geteuid() != 0:
            self.skipTest("becoming nobody needs root")
        if not SETPRIV:
            self.skipTest("no setpriv(1) (util-linux)")
        code, reports = check_json((SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups"))
        idmap = reports["idmapped_mounts"]
        self.assertFalse(idmap["available"])
        self.assertIn("needs root", idmap["detail"])
        self.assertIn("Fix: run codecell as root", idmap["detail"])
        cgroup = reports["cgroup"]
        if not cgroup["available"]:  # nobody may have a delegated v2 subtree
            self.assertIn(". Fix: ", cgroup["detail"])
            self.assertTrue("root" in cgroup["detail"] or "Delegate=yes" in cgroup["detail"],
                            cgroup["detail"])
        self.assertEveryMissingHasAFix(
            {n: r for n, r in reports.items() if n not in ("ruby", "python")})

    def test_the_text_report_has_the_same_lines(self):
        self.own_user_namespace_or_skip()
        p = subprocess.run([*in_own_user_namespace("max_user_namespaces"), BIN, "check"],
                           capture_output=True, text=True, timeout=300)
        line = next(l for l in p.stdout.splitlines() if l.startswith("user_namespace"))
        self.assertIn("MISSING", line)
        self.assertIn("user.max_user_namespaces is 0 here. Fix: sysctl -w", line)


if __name__ == "__main__":
    unittest.main()
