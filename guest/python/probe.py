# The Python interpreter's probe, run on the host when a cell is made (src/lib/spec/interpreter.c),
# as `python -I -S -c <this> FOLDER...` with the sandbox's flags: one JSON object on stdout
# that says which language and version this interpreter is, which folders of each library
# folder go on sys.path, and what the guest may import besides the standard library (each
# with its import names: whether it loads is asked in the sandbox, src/lib/run/library_check.c).
import json
import os
import stat
import sys

# The same folders, in the same order, as guest/python/prelude.py adds to sys.path.
SYSTEM = ("/usr/local/lib/python3/dist-packages",
          "/usr/local/lib/python%d.%d/dist-packages" % sys.version_info[:2],
          "/usr/lib/python3/dist-packages")
SITE = "lib/python%d.%d/site-packages" % sys.version_info[:2]


def inside(root, path):
    return path == root or path.startswith(root.rstrip("/") + "/")


def beneath(root, path, kind):
    """An fd of path when it is a file or folder (kind: stat.S_ISREG or stat.S_ISDIR) inside
    root, or None. This probe runs on the host: a symbolic link planted in a library folder (a
    guest may write one through a read-write mount of the same folder) must not lead it to the
    host's files, which the sandbox never shows. The path is checked before it is opened (no
    device or FIFO of the host is opened), and what was opened after (it cannot have been
    swapped in between)."""
    try:
        if not inside(root, os.path.realpath(path)):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if inside(root, os.readlink("/proc/self/fd/%d" % fd)) and kind(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def exists(root, path, kind):
    fd = beneath(root, path, kind)
    if fd is None:
        return False
    os.close(fd)
    return True


def entries(root, folder):
    fd = beneath(root, folder, stat.S_ISDIR)
    if fd is None:
        return []
    try:
        return sorted(os.listdir(fd))
    except OSError:
        return []
    finally:
        os.close(fd)


def lines(root, path):
    """The lines of a text file inside root; OSError when there is none."""
    fd = beneath(root, path, stat.S_ISREG)
    if fd is None:
        raise FileNotFoundError(path)
    with os.fdopen(fd, encoding="utf-8", errors="replace") as f:
        return f.read(1 << 20).splitlines()


def top_level(root, meta, name):
    """The import names of an installed distribution, from its metadata folder."""
    tops = []
    try:
        tops = [line.strip() for line in lines(root, os.path.join(meta, "top_level.txt"))]
    except OSError:
        try:
            for line in lines(root, os.path.join(meta, "RECORD")):
                first = line.split(",")[0].split("/")[0]
                if first.endswith((".dist-info", ".data")) or first in ("..", "__pycache__"):
                    continue
                tops.append(first.split(".")[0])
        except OSError:
            pass
    tops = sorted({t for t in tops if t and not t.startswith("_") and "/" not in t})
    return tops or [name.lower().replace("-", "_")]


# Distributions of the system's folders that are never offered, by their normalised names.
# They install or integrate the host's system, which the sandbox does not have: no package
# manager, no D-Bus, no desktop session, no network and a read-only /usr (docs/languages.md).
SYSTEM_ONLY = {
    "python_apt": "Debian's package manager (apt, apt_pkg, aptsources)",
    "python_debian": "Debian's package files",
    "distro_info": "Debian's and Ubuntu's release calendar",
    "dbus_python": "the D-Bus message bus",
    "pygobject": "GObject and the desktop (gi)",
    "pip": "installs packages",
    "setuptools": "builds and installs packages (pkg_resources)",
    "wheel": "builds packages",
}


def normalised(name):
    return name.lower().replace("-", "_").replace(".", "_")


def importable(root, folder, name):
    """Whether folder holds the module or package name: a folder (a package, or a namespace
    package such as mpl_toolkits), name.py or a compiled extension name.*.so."""
    path = os.path.join(folder, name)
    if exists(root, path, stat.S_ISDIR) or exists(root, path + ".py", stat.S_ISREG):
        return True
    return any(n.startswith(name + ".") and n.endswith(".so") and
               exists(root, os.path.join(folder, n), stat.S_ISREG) for n in entries(root, folder))


def libraries(root, folder, system):
    """(import name, text, import names) of what folder (inside root) holds: distributions,
    then bare packages. Of a system folder (system true), only distributions with a module
    there, and none of SYSTEM_ONLY: a bare package there (softwareproperties) is a program's
    own code, not a library."""
    found, claimed = [], set()
    names = entries(root, folder)
    for n in names:
        for suffix in (".dist-info", ".egg-info"):
            if not n.endswith(suffix):
                continue
            name, _, version = n[:-len(suffix)].partition("-")
            version = version.split("-")[0]
            if version == "0.0.0":
                # Debian's placeholder for a version it did not record (mpmath, kiwisolver).
                version = ""
            tops = top_level(root, os.path.join(folder, n), name)
            claimed.update(tops)
            if system:
                if normalised(name) in SYSTEM_ONLY:
                    continue
                # Only the modules that are there: kiwisolver's metadata also names "src".
                tops = [t for t in tops if importable(root, folder, t)]
                if not tops:
                    continue
            label = " ".join(x for x in (name, version) if x)
            if [t.lower() for t in tops] == [normalised(name)]:
                # Imported by its own name: "numpy 1.24.2".
                found.append((tops[0], " ".join(x for x in (tops[0], version) if x), tops))
            else:
                found.append((tops[0], "%s (%s)" % ("/".join(tops), label), tops))
    if system:
        return found
    for n in names:
        stem = n[:-3] if n.endswith(".py") else n
        path = os.path.join(folder, n)
        if stem in claimed or stem.startswith(("_", ".")) or not stem.isidentifier():
            continue
        if (exists(root, path, stat.S_ISREG) if n.endswith(".py")
                else exists(root, os.path.join(path, "__init__.py"), stat.S_ISREG)):
            claimed.add(stem)
            found.append((stem, stem, [stem]))
    return found


def main():
    problems, load_path, listed, seen = [], [], [], set()
    for i, folder in enumerate(sys.argv[1:]):
        if exists(folder, os.path.join(folder, "pyvenv.cfg"), stat.S_ISREG):
            # A virtualenv: its site-packages for this Python version.
            if exists(folder, os.path.join(folder, SITE), stat.S_ISDIR):
                load_path.append([i, SITE])
            else:
                problems.append([i, "is a virtualenv without %s (made for another Python "
                                    "version?)" % SITE])
        else:
            load_path.append([i, ""])
    # (root, folder): a library folder's own, each within its root; the system's, trusted.
    folders = [(sys.argv[1 + i], os.path.join(sys.argv[1 + i], sub), False)
               for i, sub in load_path]
    system = [("/", p, True) for p in SYSTEM if os.path.isdir(p)]
    # The library folders' first: they come before the system's on sys.path. Each with the
    # names to import, which the cell's first description imports in the sandbox
    # (guest/python/loads.py): what does not load is not offered.
    for group in (folders, system):
        found = [lib for root, folder, own in group for lib in libraries(root, folder, own)]
        for key, text, imports in sorted(found, key=lambda lib: lib[0].lower()):
            if key not in seen:
                seen.add(key)
                listed.append({"text": text, "imports": imports})
    print(json.dumps({"language": "python", "version": "%d.%d.%d" % sys.version_info[:3],
                      "load_path": load_path, "problems": problems, "libraries": listed}))


main()
