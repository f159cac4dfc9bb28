# The Python interpreter's probe, run on the host when a cell is made (src/lib/interpreter.c),
# as `python -I -S -c <this> FOLDER...` with the sandbox's flags: one JSON object on stdout
# that says which language and version this interpreter is, which folders of each library
# folder go on sys.path, and what the guest can import besides the standard library.
import json
import os
import sys

# The same folders, in the same order, as guest/python/prelude.py adds to sys.path.
SYSTEM = ("/usr/local/lib/python3/dist-packages",
          "/usr/local/lib/python%d.%d/dist-packages" % sys.version_info[:2],
          "/usr/lib/python3/dist-packages")
SITE = "lib/python%d.%d/site-packages" % sys.version_info[:2]


def entries(folder):
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def top_level(meta, name):
    """The import names of an installed distribution, from its metadata folder."""
    tops = []
    try:
        with open(os.path.join(meta, "top_level.txt"), encoding="utf-8") as f:
            tops = [line.strip() for line in f]
    except OSError:
        try:
            with open(os.path.join(meta, "RECORD"), encoding="utf-8") as f:
                for line in f:
                    first = line.split(",")[0].split("/")[0]
                    if first.endswith((".dist-info", ".data")) or first in ("..", "__pycache__"):
                        continue
                    tops.append(first.split(".")[0])
        except OSError:
            pass
    tops = sorted({t for t in tops if t and not t.startswith("_") and "/" not in t})
    return tops or [name.lower().replace("-", "_")]


def libraries(folder):
    """(import name, text) of what folder holds: distributions, then bare packages."""
    found, claimed = [], set()
    names = entries(folder)
    for n in names:
        for suffix in (".dist-info", ".egg-info"):
            if not n.endswith(suffix):
                continue
            name, _, version = n[:-len(suffix)].partition("-")
            version = version.split("-")[0]
            tops = top_level(os.path.join(folder, n), name)
            claimed.update(tops)
            label = " ".join(x for x in (name, version) if x)
            if [t.lower() for t in tops] == [name.lower().replace("-", "_").replace(".", "_")]:
                # Imported by its own name: "numpy 1.24.2".
                found.append((tops[0], " ".join(x for x in (tops[0], version) if x)))
            else:
                found.append((tops[0], "%s (%s)" % ("/".join(tops), label)))
    for n in names:
        stem = n[:-3] if n.endswith(".py") else n
        path = os.path.join(folder, n)
        if stem in claimed or stem.startswith(("_", ".")) or not stem.isidentifier():
            continue
        if n.endswith(".py") or os.path.isfile(os.path.join(path, "__init__.py")):
            claimed.add(stem)
            found.append((stem, stem))
    return found


def main():
    problems, load_path, listed, seen = [], [], [], set()
    for i, folder in enumerate(sys.argv[1:]):
        if os.path.isfile(os.path.join(folder, "pyvenv.cfg")):
            # A virtualenv: its site-packages for this Python version.
            if os.path.isdir(os.path.join(folder, SITE)):
                load_path.append([i, SITE])
            else:
                problems.append([i, "is a virtualenv without %s (made for another Python "
                                    "version?)" % SITE])
        else:
            load_path.append([i, ""])
    folders = [os.path.join(sys.argv[1 + i], sub) for i, sub in load_path]
    # The library folders' first: they come before the system's on sys.path.
    for group in (folders, [p for p in SYSTEM if os.path.isdir(p)]):
        found = [lib for folder in group for lib in libraries(folder)]
        for key, text in sorted(found, key=lambda lib: lib[0].lower()):
            if key not in seen:
                seen.add(key)
                listed.append(text)
    print(json.dumps({"language": "python", "version": "%d.%d.%d" % sys.version_info[:3],
                      "load_path": load_path, "problems": problems, "libraries": listed}))


main()
