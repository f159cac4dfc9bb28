#include "mount_roots.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

#define PERMISSION_BITS 07777

int mount_roots_open(struct mount_roots *m, const codecell_config *config, codecell_error *err)
{
        *m = (struct mount_roots){0};
        pthread_mutex_init(&m->lock, NULL);
        m->roots = calloc(config->n_mounts ? config->n_mounts : 1, sizeof(*m->roots));
        if (!m->roots)
                return err_sys(err, ENOMEM, "mounts");
        for (size_t i = 0; i < config->n_mounts; i++) {
                const struct cc_mount *mount = &config->mounts[i];
                if (!mount->read_write)
                        continue;
                /* O_RDONLY, not O_PATH: fchmod needs a real descriptor. */
                int fd = open(mount->source, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                struct stat st;
                if (fd < 0 || fstat(fd, &st) < 0) {
                        int saved = errno;
                        if (fd >= 0)
                                close(fd);
                        return err_sys(err, saved, "mount %s: %s", mount->dest, mount->source);
                }
                m->roots[m->n++] =
                        (struct mount_root){.fd = fd, .mode = st.st_mode & PERMISSION_BITS};
        }
        return 0;
}

void mount_roots_restore(struct mount_roots *m)
{
        if (m->n == 0)
                return;
        pthread_mutex_lock(&m->lock);
        for (size_t i = 0; i < m->n; i++) {
                struct stat st;
                if (fstat(m->roots[i].fd, &st) == 0 &&
                    (st.st_mode & PERMISSION_BITS) != m->roots[i].mode)
                        (void)fchmod(m->roots[i].fd, m->roots[i].mode);
        }
        pthread_mutex_unlock(&m->lock);
}

void mount_roots_close(struct mount_roots *m)
{
        for (size_t i = 0; i < m->n; i++)
                close(m->roots[i].fd);
        free(m->roots);
        m->roots = NULL;
        m->n = 0;
        pthread_mutex_destroy(&m->lock);
}
