"""The package's build backend (PEP 517), in the tree so that an offline `pip install
--no-build-isolation` needs nothing but pip, gcc and pkg-config: no setuptools, no wheel.

It compiles the engine into one shared library, codecell/_engine.so, which codecell/_native.py
loads with ctypes. In the repository the engine's sources are copied first with
bindings/vendor.cmake; an unpacked source tree carries that copy in engine/. The wheel holds the
library, so the installed package needs nothing from the repository afterwards."""
import base64
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _project():
    """name, version, summary and requires-python from pyproject.toml's [project]."""
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("[project]", 1)[1].split("\n[", 1)[0]
    fields = dict(re.findall(r'^([a-z-]+)\s*=\s*"([^"]*)"', section, re.M))
    return fields["name"], fields["version"], fields.get("description", ""), \
        fields.get("requires-python", "")


def _run(command):
    try:
        return subprocess.run(command, check=True, capture_output=True, text=True).stdout
    except FileNotFoundError:
        raise SystemExit("codecell: %s is needed to build the package" % command[0])
    except subprocess.CalledProcessError as e:
        raise SystemExit("codecell: %s failed:\n%s%s" % (" ".join(command[:3]), e.stdout,
                                                          e.stderr))


def _engine_sources(scratch):
    vendor = os.path.join(ROOT, "bindings", "vendor.cmake")
    if os.path.isfile(vendor) and os.path.isdir(os.path.join(ROOT, "src", "lib")):
        engine = os.path.join(scratch, "engine")
        _run(["cmake", "-DDEST=" + engine, "-P", vendor])
        return engine
    engine = os.path.join(HERE, "engine")
    if not os.path.isdir(engine):
        raise SystemExit("codecell: neither the repository nor engine/ is here")
    return engine


def _compile(engine, out):
    packages = ["libseccomp", "jansson"]
    flags = _run(["pkg-config", "--cflags", "--libs"] + packages).split()
    # libcurl: its header only (MCP over HTTP); the engine loads libcurl.so.4 when it needs it.
    # Linked, its two dozen libraries would be mapped into every process that imports codecell,
    # and each fork (every codecell.jail forks twice) copies their mappings.
    flags += _run(["pkg-config", "--cflags", "libcurl"]).split()
    sources = sorted(glob.glob(os.path.join(engine, "*.c")))
    # The engine is C11 with GNU interfaces; only its public API (CODECELL_API) is exported.
    _run([os.environ.get("CC", "gcc"), "-shared", "-fPIC", "-O2", "-std=gnu11", "-D_GNU_SOURCE",
          "-fvisibility=hidden", "-I", engine, "-o", out] + sources + flags + ["-lpthread"])


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def _dist_info(name, version, summary, requires):
    metadata = "Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\n" % (
        name, version, summary)
    if requires:
        metadata += "Requires-Python: %s\n" % requires
    readme = os.path.join(HERE, "README.md")
    if os.path.isfile(readme):
        with open(readme, encoding="utf-8") as f:
            metadata += "Description-Content-Type: text/markdown\n\n" + f.read()
    return metadata


def _tag():
    # Pure Python calling a native library through ctypes: any Python 3 on this platform.
    return "py3-none-" + re.sub(r"[-.]", "_", sysconfig.get_platform())


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    name, version, summary, requires = _project()
    dist_info = "%s-%s.dist-info" % (name, version)
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    with open(os.path.join(metadata_directory, dist_info, "METADATA"), "w",
              encoding="utf-8") as f:
        f.write(_dist_info(name, version, summary, requires))
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name, version, summary, requires = _project()
    dist_info = "%s-%s.dist-info" % (name, version)
    files = {}
    for path in sorted(glob.glob(os.path.join(HERE, "codecell", "*.py"))):
        with open(path, "rb") as f:
            files["codecell/" + os.path.basename(path)] = f.read()
    scratch = tempfile.mkdtemp(prefix="codecell-build.")
    try:
        library = os.path.join(scratch, "_engine.so")
        _compile(_engine_sources(scratch), library)
        with open(library, "rb") as f:
            files["codecell/_engine.so"] = f.read()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    files[dist_info + "/METADATA"] = _dist_info(name, version, summary, requires).encode()
    files[dist_info + "/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: codecell_build\n"
                                   "Root-Is-Purelib: false\nTag: %s\n" % _tag()).encode()
    files[dist_info + "/top_level.txt"] = b"codecell\n"
    record = [_record_line(path, data) for path, data in files.items()]
    record.append(dist_info + "/RECORD,,")
    files[dist_info + "/RECORD"] = ("\n".join(record) + "\n").encode()

    wheel = "%s-%s-%s.whl" % (name, version, _tag())
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if path.endswith(".so") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return wheel


if __name__ == "__main__":
    sys.exit("codecell_build is pip's build backend: pip install bindings/python")
