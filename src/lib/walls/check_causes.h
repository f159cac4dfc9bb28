/* Why a layer codecell_host_check found missing is missing on this host, and what fixes it.
 * Walls floor, for check.c only. Each function writes one line, "<cause>. Fix: <fix>", from
 * what the host shows (the errno of the probe, the sysctls, this process's seccomp mode, the
 * kernel's release, the LSMs), never from a guess about the distribution; where nothing names
 * the cause, it says so and lists what to look at. */
#ifndef CODECELL_CHECK_CAUSES_H
#define CODECELL_CHECK_CAUSES_H

#include <stddef.h>

/* unshare(CLONE_NEWUSER) failed with errno e. */
void cause_user_namespace(int e, char *out, size_t size);
/* A namespace (short name: "mnt", "pid", "net", "ipc", "uts", "cgroup") failed with errno e
 * inside a new user namespace. */
void cause_namespace(const char *kind, int e, char *out, size_t size);
/* A user namespace inside one (a forked sandbox's, in its zygote's) failed with errno e. */
void cause_nested_user_namespace(int e, char *out, size_t size);
/* landlock_create_ruleset(VERSION) failed with errno e. */
void cause_landlock(int e, char *out, size_t size);
/* Landlock's ABI is abi (> 0) but below 4, the first with network rules. */
void cause_landlock_network(int abi, char *out, size_t size);
/* The seccomp filter could not be used: why is the error of the step that failed. */
void cause_seccomp(const char *why, char *out, size_t size);
/* A fresh /proc could not be mounted in new namespaces: e its errno. */
void cause_fresh_proc(int e, char *out, size_t size);
/* No cgroup could be made: why is cgroup_place_find's or the backend's message. */
void cause_cgroup(const char *why, char *out, size_t size);
/* An idmapped mount of /tmp was refused (as root) with why. */
void cause_idmapped_mount(const char *why, char *out, size_t size);

#endif
