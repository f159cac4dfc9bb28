"""Helpers for the end-to-end tests: run the real codecell binary and read what it says."""
import ctypes
import json
import os
import subprocess
import tempfile

BIN = os.environ.get("CODECELL_BIN") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "codecell")


class Run:
    def __init__(self, proc):
        self.code = proc.returncode
        self.stdout = proc.stdout_text
        self.stderr = proc.stderr_text
        self.result = None
        if self.stdout.startswith("{"):
            self.result = json.loads(self.stdout)

    @property
    def status(self):
        return self.result and self.result["status"]

    def __repr__(self):
        return f"exit {self.code}\nstdout: {self.stdout[:2000]}\nstderr: {self.stderr[:2000]}"


LAUNCHED = []  # pids of the codecell processes started, to find what they left behind


# How much slower than the host this machine runs: 1 here; measured by the cgroup v2 lane's
# VM under emulation (scripts/vm/guest.sh: `ruby -e 1` there against the host). Wall-clock
# limits of the tests that run there are multiplied by it, and only there.
SLOWDOWN = max(1.0, float(os.environ.get("CODECELL_SLOWDOWN") or 1))


def scaled(seconds):
    """A wall-clock limit in seconds, for this machine's speed."""
    return seconds * SLOWDOWN


def scaled_timeouts(args):
    """The arguments with each `--timeout DURATION` (ms or s) for this machine's speed: CPU
    budgets (--cpu) count the CPU the run spends, which emulation makes slower as well, and
    are left as they are."""
    out = list(args)
    if SLOWDOWN == 1:
        return out
    for i in range(len(out) - 1):
        if out[i] == "--timeout":
            value = out[i + 1]
            ms = float(value[:-2]) if value.endswith("ms") else float(value.rstrip("s")) * 1000
            out[i + 1] = f"{int(ms * SLOWDOWN)}ms"
    return out


def codecell(*args, stdin=None, timeout=120):
    args = scaled_timeouts(args)
    timeout = scaled(timeout)
    with subprocess.Popen([BIN, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as proc:
        LAUNCHED.append(proc.pid)
        proc.stdout_text, proc.stderr_text = proc.communicate(stdin, timeout=timeout)
    return Run(proc)


def run_json(code, *flags, lang=None, **kw):
    lang_flags = ("--lang", lang) if lang else ()
    return codecell("run", "--json", *lang_flags, *flags, "-e", code, **kw)


LANGUAGES = ("ruby", "python")


class EachLanguage:
    """Mixin: run one case in every guest language. `code` maps a language to its snippet; the
    same `check` applies to each result, which is the point: the behaviour is the same."""

    def each_language(self, code, check, *flags):
        for lang in LANGUAGES:
            with self.subTest(lang=lang):
                r = run_json(code[lang], *flags, lang=lang)
                self.assertIsNotNone(r.result, r)
                check(r, lang)


def children_of(pid):
    """Every child of pid, of whichever of its threads started it."""
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(k) for k in f.read().split()]
        except OSError:
            pass
    return found


def descendants(pid):
    """Every process under pid."""
    found, todo = [], [pid]
    while todo:
        kids = children_of(todo.pop())
        found += kids
        todo += kids
    return found


def comm_of(pid):
    """pid's name (comm), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def become_subreaper():
    """Orphans of the codecell processes we start are re-parented to us, so a sandbox that
    outlived its engine shows up among our children."""
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_CHILD_SUBREAPER = 36
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def stray_children():
    """Live processes whose parent is this test process (codecell itself has exited by now)."""
    me = str(os.getpid())
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] != me:
            continue
        if fields[0] == "Z":  # dead, and ours to reap now that we are the subreaper
            os.waitpid(int(pid), os.WNOHANG)
            continue
        found.append(int(pid))
    return found


def leftover_cgroups(pids):
    """cgroups that the codecell processes `pids` made (named codecell-<pid>-<n>) and left."""
    prefixes = tuple(f"codecell-{pid}-" for pid in pids)
    left = set()
    for dirpath, dirnames, _ in os.walk("/sys/fs/cgroup"):
        left.update(os.path.join(dirpath, d) for d in dirnames if d.startswith(prefixes))
        if dirpath.count("/") > 8:
            dirnames[:] = []
    return sorted(left)


def tempdir(test):
    d = tempfile.mkdtemp(prefix="codecell-e2e-")
    test.addCleanup(subprocess.run, ["rm", "-rf", d])
    return d


# t { … } / t(lambda: …): the value, or the errno name (EROFS) or class of what was raised.
PRELUDE = {
    "ruby": 'def t; yield; rescue SystemCallError => e; e.class.name.sub("Errno::", ""); '
            'rescue => e; e.class.name; end\n',
    "python": "import errno, os\n"
              "def t(f):\n"
              "    try:\n        return f()\n"
              "    except OSError as e:\n        return errno.errorcode.get(e.errno, type(e).__name__)\n"
              "    except Exception as e:\n        return type(e).__name__\n",
}


def probe(ruby, python):
    """Code for each language, with t() defined."""
    return {"ruby": PRELUDE["ruby"] + ruby, "python": PRELUDE["python"] + python}
