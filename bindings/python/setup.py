"""Builds codecell's engine into the package as one shared library (codecell/_engine*.so),
which codecell/_native.py loads with ctypes. In the repository the engine's sources are copied
into the build folder first (bindings/vendor.cmake); an unpacked source distribution carries
that copy in engine/. Either way the installed package needs nothing from the repository."""
import glob
import os
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args, "libseccomp", "jansson"], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit("codecell: pkg-config cannot find libseccomp and jansson "
                         "(Debian: libseccomp-dev libjansson-dev): %s" % e)
    return out.split()


class BuildEngine(build_ext):
    def build_extensions(self):
        vendor = os.path.join(ROOT, "bindings", "vendor.cmake")
        if os.path.isfile(vendor) and os.path.isdir(os.path.join(ROOT, "src", "lib")):
            engine = os.path.abspath(os.path.join(self.build_temp, "engine"))
            subprocess.run(["cmake", "-DDEST=" + engine, "-P", vendor], check=True)
        else:
            engine = os.path.join(HERE, "engine")
            if not os.path.isdir(engine):
                raise SystemExit("codecell: neither the repository nor engine/ is here")
        for ext in self.extensions:
            ext.sources = sorted(glob.glob(os.path.join(engine, "*.c")))
            ext.include_dirs = [engine]
            ext.extra_compile_args = ["-std=gnu11", "-D_GNU_SOURCE", "-fvisibility=hidden",
                                      "-O2"] + pkg_config("--cflags")
            ext.extra_link_args = pkg_config("--libs") + ["-lpthread"]
        super().build_extensions()

    def get_export_symbols(self, ext):
        # Not a Python module: ctypes loads it, and it has no PyInit_ function.
        return []


setup(ext_modules=[Extension("codecell._engine", sources=["engine"])],
      cmdclass={"build_ext": BuildEngine})
