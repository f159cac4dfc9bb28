# Cross-building for arm64 on a Debian amd64 host (make cross-arm64): Debian's
# gcc-aarch64-linux-gnu, and the libraries' multiarch :arm64 -dev packages, found through
# their own pkg-config files (scripts/bootstrap --arm64 installs both).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
# Only the arm64 .pc files: an amd64 libseccomp must never be linked by mistake.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
# The unit tests run under qemu-user (make test-arm64): CTest starts each through it.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
