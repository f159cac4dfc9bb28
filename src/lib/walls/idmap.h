/* The user namespaces that idmapped mounts take their mapping from (mount_setattr with
 * MOUNT_ATTR_IDMAP): a cell's read-write mounts (cell_plan.c, standby.c) and a root caller's
 * jail's fs_allow folders (jail_idmap.c). Only a process privileged in the host's user
 * namespace may idmap a host file system. */
#ifndef CODECELL_IDMAP_H
#define CODECELL_IDMAP_H

#include <sys/types.h>

#include "error.h"

/* A user namespace whose only mapping is host `from` -> host `to`, for an idmapped mount that
 * shows a folder's owner as `to` (and stores the files `to` creates as that owner): its fd
 * (close-on-exec), or < 0 with err. Costs a short-lived child process. */
int idmap_userns(uid_t from_uid, gid_t from_gid, uid_t to_uid, gid_t to_gid, codecell_error *err);

/* Whether the file system under `path` takes an idmap: a detached clone of the folder (and
 * what is mounted below it) idmapped with `userns_fd` and dropped. 0 when it does, else
 * -errno: EINVAL from a file system without idmap support (tmpfs before Linux 6.3, 9p,
 * NFS...), where a read-write mount stays a plain bind. */
int idmap_probe(const char *path, int userns_fd);

#endif
