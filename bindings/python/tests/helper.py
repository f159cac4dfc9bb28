"""Shared by the package's tests, which run against the installed package
(tests/bindings/install.sh in the repository)."""
import gc
import os
import time


def wait_until(condition, seconds=60):
    """Polls condition (generously: the machine may be loaded); fails after seconds."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met within %d s" % seconds)
        gc.collect()
        time.sleep(0.05)


def descendants(of=None):
    """Processes below this one (or below pid `of`) that belong to sandboxes of any cell: not
    counting a forked cell's zygote, which lives as long as its cell, and the init of its own
    sandbox."""
    parents = {}
    zygotes = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                stat = f.read()
        except OSError:
            continue
        parents[int(pid)] = int(stat[stat.rindex(")") + 2:].split()[1])
        if stat[stat.index("(") + 1:stat.rindex(")")] == "codecell-zygote":
            zygotes.append(int(pid))
    holders = set(zygotes) | {parents[z] for z in zygotes}
    me = of or os.getpid()
    count = 0
    for pid in parents:
        if pid in holders:
            continue
        p = parents[pid]
        while p and p > 1 and p != me:
            p = parents.get(p)
        count += p == me
    return count


def os_threads():
    return len(os.listdir("/proc/self/task"))
