# The zygote's sources, relative to the repository: the fork server a forked cell loads into its
# interpreter (src/zygote/zygote.c) and the engine's files it compiles in again. One list for the
# build (CMakeLists.txt) and for the bindings' own (bindings/vendor.cmake): a file missing from
# one of them made a zygote that links (a shared object may leave symbols undefined) and then
# fails to load, so both also link it with -z defs.
set(CODECELL_ZYGOTE_SOURCES
    src/zygote/zygote.c src/zygote/into_cgroup.c
    src/lib/walls/sandbox_entry.c src/lib/walls/landlock.c src/lib/walls/capabilities.c
    src/lib/walls/proxy_listener.c src/lib/walls/fd_passing.c)
