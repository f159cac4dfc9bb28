"""The kernel's privileged surface, tried from inside the sandbox by a C probe (probe.c) loaded
into the guest interpreter: each system call gets exactly the answer listed here, in Ruby
(Fiddle) and in Python (ctypes), as root and as a normal user."""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import run_json  # noqa: E402

PROBE = os.environ.get("CODECELL_PROBE")

# What the kernel answers. "seccomp" marks a call the filter refuses (EPERM, or EAFNOSUPPORT for
# socket families other than AF_UNIX, or ENOSYS for clone3 so libc falls back to clone);
# the others are refused by the namespaces, Landlock or missing capabilities themselves.
EXPECTED = {
    "socket_unix": "ok",                   # the only family allowed (the control socket's)
    "socket_unix_dgram": "EPERM",          # seccomp: a datagram can be sent to any socket file
    "socket_unix_raw": "EPERM",            # seccomp: the same (AF_UNIX makes RAW a datagram)
    "socketpair_dgram": "EPERM",           # seccomp: sendmsg may name another address
    "connect_unix_path": "EPERM",          # seccomp: a mounted folder may hold a host service's socket
    "socket_tcp": "EAFNOSUPPORT",          # seccomp
    "socket_udp6": "EAFNOSUPPORT",         # seccomp
    "socket_raw": "EAFNOSUPPORT",          # seccomp
    "socket_packet": "EAFNOSUPPORT",       # seccomp
    "socket_netlink": "EAFNOSUPPORT",      # seccomp
    "mount": "EPERM",                      # seccomp
    "umount2": "EPERM",                    # seccomp
    "unshare_user": "EPERM",               # seccomp
    "unshare_mount": "EPERM",              # seccomp
    "unshare_net": "EPERM",                # seccomp
    "setns": "EPERM",                      # seccomp
    "pivot_root": "EPERM",                 # seccomp
    "chroot": "EPERM",                     # seccomp
    "fsopen": "EPERM",                     # seccomp
    "open_tree": "EPERM",                  # seccomp
    "keyctl": "EPERM",                     # seccomp
    "add_key": "EPERM",                    # seccomp
    "bpf": "EPERM",                        # seccomp
    "perf_event_open": "EPERM",            # seccomp
    "io_uring_setup": "EPERM",             # seccomp
    "userfaultfd": "EPERM",                # seccomp
    "init_module": "EPERM",                # seccomp
    "finit_module": "EPERM",               # seccomp
    "delete_module": "EPERM",              # seccomp
    "kexec_load": "EPERM",                 # seccomp
    "kexec_file_load": "EPERM",            # seccomp
    "reboot": "EPERM",                     # seccomp
    "swapon": "EPERM",                     # seccomp
    "acct": "EPERM",                       # seccomp
    "clock_settime": "EPERM",              # seccomp
    "settimeofday": "EPERM",               # seccomp
    "sethostname": "EPERM",                # seccomp
    "personality_linux32": "EPERM",        # seccomp
    "ioctl_tiocsti": "EPERM",              # seccomp
    "ptrace_attach_init": "EPERM",         # seccomp
    "proc_1_mem": "EACCES",                # init is not ours to read (ptrace access mode)
    "process_vm_readv_init": "EPERM",      # seccomp
    "pidfd_getfd_init": "EPERM",           # seccomp
    "kcmp": "EPERM",                       # seccomp
    "move_pages_init": "EPERM",            # seccomp
    "kill_init": "EPERM",                  # init is the only other process, and it is not ours
    "setuid_root": "EINVAL",               # uid 0 is not mapped in the user namespace
    "setgid_root": "EINVAL",               # nor gid 0
    "raise_rlimit_nofile": "EPERM",        # no CAP_SYS_RESOURCE
    "mknod_device": "EACCES",              # Landlock (make_char/make_block not granted)
    "chown_root": "EINVAL",                # uid 0 is not mapped
    "fork": "EPERM",                       # seccomp (no subprocesses)
    "vfork_like_clone": "EPERM",           # seccomp
    "clone3": "ENOSYS",                    # seccomp
    "execve_shell": "EACCES",              # Landlock: only the interpreter may be executed
    "iopl": "EPERM",                       # seccomp
    "ioperm": "EPERM",                     # seccomp
    "syslog": "EPERM",                     # seccomp
    "quotactl": "EPERM",                   # seccomp
    "open_by_handle_at": "EPERM",          # seccomp
    "name_to_handle_at": "EPERM",          # seccomp
    "lookup_dcookie": "EPERM",             # seccomp
    "fanotify_init": "EPERM",              # seccomp
    "vhangup": "EPERM",                    # seccomp
    # No new namespaces by clone, with or without subprocesses (unshare and setns above).
    "clone_newuser": "EPERM",              # seccomp
    "clone_newuser_newnet_newns": "EPERM", # seccomp
    "clone_newpid": "EPERM",               # seccomp
    "clone_newnet": "EPERM",               # seccomp
    "clone_newipc_newuts": "EPERM",        # seccomp
    "clone_newcgroup": "EPERM",            # seccomp
    # No setuid or setgid bit, whichever call would set it; no world-write by chmod.
    "chmod_setuid": "EPERM",               # seccomp
    "fchmod_setgid": "EPERM",              # seccomp
    "fchmodat_setuid": "EPERM",            # seccomp
    "fchmodat2_setuid": "EPERM",           # seccomp (by number: newer than libseccomp)
    "chmod_world_writable": "EPERM",       # seccomp
    "open_creat_setuid_setgid": "EPERM",   # seccomp
    "mknod_setgid_file": "EPERM",          # seccomp
    "openat2": "ENOSYS",                   # seccomp: its mode is in memory; libc falls back
    "setxattr_capability": "EPERM",        # seccomp: no extended attributes at all
    # Nothing the guest wrote runs as a program.
    "memfd_create": "EPERM",               # seccomp
    "memfd_secret": "EPERM",               # seccomp
    "mmap_exec_tmp": "EPERM",              # /tmp, /work and read-write folders are noexec
    "inode_flags_ioctl": "EPERM",          # seccomp: chattr flags would stay on host files
    "file_setattr": "EPERM",               # seccomp (by number)
    # Nothing of the host's activity, nothing of the host's paths.
    "inotify_init1": "EPERM",              # seccomp
    "dnotify_usr_bin": "EPERM",            # seccomp (fcntl F_NOTIFY)
    "dnotify_high_bits": "EPERM",          # seccomp: the command's low 32 bits, as the kernel reads it
    "fcntl_setlease": "EPERM",             # seccomp (fcntl F_SETLEASE)
    "prctl_set_dumpable": "EPERM",         # seccomp: no process of the guest's uid may ptrace it
    "proc_self_mountinfo": "EACCES",       # Landlock: only the guest's own status files
    "statmount": "EPERM",                  # seccomp
    "listmount": "EPERM",                  # seccomp
    "open_tree_attr": "EPERM",             # seccomp, by number (as open_tree)
    "process_madvise": "EPERM",            # seccomp (as mbind)
    "set_mempolicy_home_node": "EPERM",    # seccomp (as set_mempolicy)
}

# What changes in a cell that allows subprocesses (--allow-subprocesses): processes may be
# made and the system's programs run; every other answer is the same.
WITH_SUBPROCESSES = {
    "fork": "ok",
    "vfork_like_clone": "ok",
    "execve_shell": "ok",                  # /bin/sh runs, in a child
}

CODE = {
    "python": """
import ctypes, errno
lib = ctypes.CDLL("/probe/probe.so")
lib.probe_names.restype = ctypes.c_char_p
lib.probe_run.restype = ctypes.c_long
lib.probe_run.argtypes = [ctypes.c_char_p]
{n: (errno.errorcode.get(r, str(r)) if r else "ok")
 for n in lib.probe_names().decode().split() for r in [lib.probe_run(n.encode())]}
""",
    "ruby": """
require "fiddle"
lib = Fiddle.dlopen("/probe/probe.so")
names = Fiddle::Function.new(lib["probe_names"], [], Fiddle::TYPE_VOIDP).call.to_s.split
run = Fiddle::Function.new(lib["probe_run"], [Fiddle::TYPE_VOIDP], Fiddle::TYPE_LONG)
names.to_h do |n|
  r = run.call(n)
  [n, r.zero? ? "ok" : (Errno.constants.find { |c| Errno.const_get(c)::Errno == r } || r).to_s]
end
""",
}


@unittest.skipUnless(PROBE, "CODECELL_PROBE (the built probe.so) is not set")
class KernelSurface(unittest.TestCase):
    def setUp(self):
        # A folder the guest can read whoever runs the test (the build tree may be private).
        self.dir = tempfile.mkdtemp(prefix="codecell-probe-")
        self.addCleanup(shutil.rmtree, self.dir)
        shutil.copy(PROBE, os.path.join(self.dir, "probe.so"))
        os.chmod(self.dir, 0o755)
        os.chmod(os.path.join(self.dir, "probe.so"), 0o755)

    def expect_answers(self, expected, *flags):
        for lang in ("ruby", "python"):
            with self.subTest(lang=lang, flags=flags):
                r = run_json(CODE[lang], "--mount", f"{self.dir}:/probe:exec", *flags, lang=lang)
                self.assertEqual(r.status, "ok", r)
                self.assertEqual(r.result["value"], expected)

    def test_every_privileged_call_gets_its_exact_answer(self):
        self.expect_answers(EXPECTED)

    def test_the_same_with_subprocesses_allowed(self):
        self.expect_answers({**EXPECTED, **WITH_SUBPROCESSES}, "--allow-subprocesses")


if __name__ == "__main__":
    unittest.main()
