#include "zygote_walls.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

static const char *tmpfs_options(const struct mount_plan *mounts, const char *dest)
{
        for (size_t i = 0; i < mounts->n_ops; i++)
                if (mounts->ops[i].kind == OP_TMPFS && strcmp(mounts->ops[i].dest, dest) == 0)
                        return mounts->ops[i].options;
        return NULL;
}

int zygote_walls_encode(struct zygote_walls *w, const struct mount_plan *mounts,
                        const struct landlock_plan *landlock, const struct seccomp_program *filter,
                        const struct sandbox_rlimit *rlimits, size_t n_rlimits, uid_t inner_uid,
                        gid_t inner_gid, codecell_error *err)
{
        memset(w, 0, sizeof(*w));
        w->magic = ZYGOTE_MAGIC;
        w->size = sizeof(*w);
        w->inner_uid = (uint32_t)inner_uid;
        w->inner_gid = (uint32_t)inner_gid;
        const char *tmp = tmpfs_options(mounts, "/tmp"), *work = tmpfs_options(mounts, "/work");
        if (!tmp || !work || strlen(tmp) >= sizeof(w->tmp_options) ||
            strlen(work) >= sizeof(w->work_options))
                return err_set(err, CODECELL_ERR_SYSTEM, EINVAL,
                               "zygote: the mount plan has no /tmp or /work it can copy");
        strcpy(w->tmp_options, tmp);
        strcpy(w->work_options, work);
        w->landlock_abi = landlock->abi;
        w->landlock_connect_port = landlock->connect_port;
        size_t used = 0;
        for (size_t i = 0; i < landlock->n_rules; i++) {
                size_t len = strlen(landlock->rules[i].path) + 1;
                if (used + len > sizeof(w->paths))
                        return err_set(err, CODECELL_ERR_SYSTEM, E2BIG,
                                       "zygote: the Landlock rules' paths are too long");
                memcpy(w->paths + used, landlock->rules[i].path, len);
                w->rules[i].grant = (uint32_t)landlock->rules[i].grant;
                w->rules[i].path = (uint32_t)used;
                used += len;
        }
        w->n_rules = (uint32_t)landlock->n_rules;
        if (n_rlimits > ZYGOTE_MAX_RLIMITS)
                return err_set(err, CODECELL_ERR_SYSTEM, E2BIG, "zygote: too many rlimits");
        for (size_t i = 0; i < n_rlimits; i++) {
                w->rlimits[i].resource = rlimits[i].resource;
                w->rlimits[i].cur = rlimits[i].value.rlim_cur;
                w->rlimits[i].max = rlimits[i].value.rlim_max;
        }
        w->n_rlimits = (uint32_t)n_rlimits;
        if (filter->prog.len == 0 || filter->prog.len > ZYGOTE_MAX_FILTER)
                return err_set(err, CODECELL_ERR_SYSTEM, E2BIG,
                               "zygote: a seccomp filter of %u instructions", filter->prog.len);
        memcpy(w->filter, filter->prog.filter, filter->prog.len * sizeof(struct sock_filter));
        w->filter_len = filter->prog.len;
        return 0;
}
