/* The files of /proc/self the guest may read (the interpreter's own status, maps, limits …);
 * the rest of /proc/self, mountinfo among them, is not granted. A list for an initializer:
 * also compiled into a forked sandbox's init (src/zygote/init.c), which has no libc. */
#ifndef CODECELL_LANDLOCK_PROC_FILES_H
#define CODECELL_LANDLOCK_PROC_FILES_H

#define LANDLOCK_PROC_SELF_FILES                                                                   \
        "status", "stat", "statm", "maps", "smaps", "smaps_rollup", "limits", "cmdline", "comm",   \
                "environ", "io", "uid_map", "gid_map", "cgroup", "oom_score"

#endif
