/* The host folders mounted read-write keep their own mode. Inside the sandbox the guest owns the
 * folder it writes to (the idmapped mount shows the owner as the guest), and an owner may chmod:
 * seccomp refuses the dangerous bits (setuid, setgid, world-write); what is left (0700, g+w …)
 * is put back after every run, so the folder is as the host set it. */
#ifndef CODECELL_MOUNT_ROOTS_H
#define CODECELL_MOUNT_ROOTS_H

#include <pthread.h>
#include <sys/types.h>

#include "config.h"

struct mount_root {
        int fd;      /* the folder, opened when the cell was made */
        mode_t mode; /* its permission bits then */
};

struct mount_roots {
        struct mount_root *roots;
        size_t n;
        pthread_mutex_t lock;
};

/* Opens every read-write mount's folder and notes its mode. 0, or < 0 with err. */
int mount_roots_open(struct mount_roots *m, const codecell_config *config, codecell_error *err);
/* Puts back the mode of any folder whose mode changed. */
void mount_roots_restore(struct mount_roots *m);
void mount_roots_close(struct mount_roots *m);

#endif
