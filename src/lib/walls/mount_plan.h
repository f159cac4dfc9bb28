/* The sandbox's file system as a list of typed operations run in order (bubblewrap's SetupOp).
 * Built once per cell in the engine; applied in the sandbox between clone and exec, where
 * nothing allocates. */
#ifndef CODECELL_MOUNT_PLAN_H
#define CODECELL_MOUNT_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"

/* 64, and the two files of a forked cell's zygote (zygote_protocol.h), which take nothing
 * from the room left for the user's mounts. */
#define MOUNT_PLAN_MAX_OPS 66

/* A network cell with terminate_tls: the system's roots and the cell's CA, which the guest
 * trusts (its SSL_CERT_FILE, REQUESTS_CA_BUNDLE ...). */
#define MOUNT_PLAN_CA_BUNDLE "/etc/ssl/codecell/ca-bundle.pem"

enum mount_op_kind {
        OP_DIR,     /* an empty directory (a mount point for nothing, or a parent) */
        OP_FILE,    /* a small file with fixed contents (/etc/hostname, the prelude) */
        OP_SYMLINK, /* the merged-usr links, /dev/fd */
        OP_BIND,    /* a host file or directory, read-only unless writable */
        OP_TMPFS,   /* a size-capped tmpfs (/tmp, /work) */
        OP_PROC,    /* a fresh procfs of the sandbox's pid namespace */
};

struct mount_op {
        enum mount_op_kind kind;
        char *dest;     /* inside the sandbox, absolute */
        char *source;   /* BIND: host path; SYMLINK: target; FILE: contents */
        size_t size;    /* FILE: bytes of contents (which may hold NULs) */
        bool program;   /* FILE: executable (0755) */
        char *options;  /* TMPFS: mount data */
        bool writable;  /* BIND: read-write */
        bool devices;   /* BIND: a device node (no nodev) */
        bool is_file;   /* BIND: the source is a file */
        bool noexec;    /* BIND: nothing on it may be executed or mapped executable */
        int user_mount; /* BIND: index of the user's mount, or -1 for a system bind */
};

struct mount_plan {
        struct mount_op ops[MOUNT_PLAN_MAX_OPS];
        size_t n_ops;
};

/* What failed inside the sandbox, written to the engine as one fixed record. */
struct child_failure {
        int errno_value;
        char what[240];
};

int mount_plan_build(struct mount_plan *plan, const codecell_config *config, uid_t inner_uid,
                     codecell_error *err);
void mount_plan_free(struct mount_plan *plan);
/* Gives the file at dest (an OP_FILE of the plan) new contents. 0, -ENOENT, or -ENOMEM. */
int mount_plan_set_contents(struct mount_plan *plan, const char *dest, const void *contents,
                            size_t size);

/* The MOUNT_ATTR_* flags a bind op's tree gets: always nosuid, nodev unless a device,
 * read-only unless writable, noexec where the guest could have written the files. */
uint64_t mount_op_attributes(const struct mount_op *op);

/* Builds the new root and pivots into it. tree_fds[i] >= 0 is a detached tree the engine
 * prepared for op i (an idmapped user mount); otherwise the op's source is cloned here.
 * Runs after clone, before exec: no allocation. 0, or -errno with *fail filled. */
int mount_plan_apply(const struct mount_plan *plan, const int *tree_fds,
                     struct child_failure *fail);

/* Appends s to a fixed buffer without allocating (for child_failure.what). */
void failure_append(struct child_failure *fail, const char *s);

#endif
