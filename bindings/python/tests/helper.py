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
    """Processes below this one (or below pid `of`): the sandboxes (and their helpers) of
    every cell."""
    parents = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                stat = f.read()
        except OSError:
            continue
        parents[int(pid)] = int(stat[stat.rindex(")") + 2:].split()[1])
    me = of or os.getpid()
    count = 0
    for pid in parents:
        p = parents[pid]
        while p and p > 1 and p != me:
            p = parents.get(p)
        count += p == me
    return count


def os_threads():
    return len(os.listdir("/proc/self/task"))
