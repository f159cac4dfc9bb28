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


def process_table():
    """{pid: parent} and {pid: name} of every process readable in /proc."""
    parents, names = {}, {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as f:
                stat = f.read()
        except OSError:
            continue
        parents[int(pid)] = int(stat[stat.rindex(")") + 2:].split()[1])
        names[int(pid)] = stat[stat.index("(") + 1:stat.rindex(")")]
    return parents, names


def below(pid, me, parents):
    """Whether pid descends from me."""
    p = parents.get(pid)
    while p and p > 1 and p != me:
        p = parents.get(p)
    return p == me


def descendants(of=None):
    """Processes below this one (or below pid `of`) that belong to sandboxes of any cell: not
    counting a forked cell's zygote, which lives as long as its cell, and the init of its own
    sandbox."""
    parents, names = process_table()
    zygotes = [pid for pid, name in names.items() if name == "codecell-zygote"]
    holders = set(zygotes) | {parents[z] for z in zygotes}
    me = of or os.getpid()
    return sum(1 for pid in parents if pid not in holders and below(pid, me, parents))


def interpreters_below(me, name):
    """The processes named name (a sandbox's interpreter) anywhere below pid me."""
    parents, names = process_table()
    return [pid for pid in parents if names[pid] == name and below(pid, me, parents)]


def os_threads():
    return len(os.listdir("/proc/self/task"))
