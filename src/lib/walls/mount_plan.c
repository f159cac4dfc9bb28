#include "mount_plan.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "egress_policy.h"
#include "error.h"
#include "interpreter.h"
#include "mount_rules.h"
#include "zygote_protocol.h"

/* The fork server (src/zygote/zygote.c), built without sanitizers and embedded at build time;
 * its size is 0 where it could not be built. */
extern const char codecell_zygote_so[];
extern const size_t codecell_zygote_so_size;
/* A forked sandbox's init (src/zygote/init.c), embedded the same way. */
extern const char codecell_init_bin[];
extern const size_t codecell_init_bin_size;

/* Where the new root is assembled before pivot_root. Every host path the plan needs has been
 * opened (open_tree) before this is covered, so sources under /tmp still work. */
#define STAGE "/tmp"

static const char etc_passwd[] = "root:x:0:0:root:/:/usr/sbin/nologin\n"
                                 "sandbox:x:1000:1000:codecell sandbox:/work:/usr/sbin/nologin\n"
                                 "nobody:x:65534:65534:nobody:/:/usr/sbin/nologin\n";
static const char etc_group[] = "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n";
static const char etc_hosts[] = "127.0.0.1\tlocalhost codecell\n::1\tlocalhost\n";
static const char etc_nsswitch[] = "passwd: files\ngroup: files\nhosts: files\n";

static int add(struct mount_plan *plan, struct mount_op op, codecell_error *err)
{
        if (plan->n_ops >= MOUNT_PLAN_MAX_OPS) {
                free(op.dest);
                free(op.source);
                free(op.options);
                return err_set(err, CODECELL_ERR_INVALID, E2BIG,
                               "mount plan: more than %d operations", MOUNT_PLAN_MAX_OPS);
        }
        if (!op.dest) {
                free(op.source);
                free(op.options);
                return err_sys(err, ENOMEM, "mount plan");
        }
        op.user_mount = op.kind == OP_BIND ? op.user_mount : -1;
        plan->ops[plan->n_ops++] = op;
        return 0;
}

/* /bin, /lib … : a link into /usr where the host is merged-usr, else a read-only bind. */
static int add_top_level_links(struct mount_plan *plan, codecell_error *err)
{
        static const char *const names[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                char host[64], target[256];
                snprintf(host, sizeof(host), "/%s", names[i]);
                struct stat st;
                if (lstat(host, &st) < 0)
                        continue;
                int r;
                if (S_ISLNK(st.st_mode)) {
                        ssize_t n = readlink(host, target, sizeof(target) - 1);
                        if (n <= 0)
                                continue;
                        target[n] = '\0';
                        r = add(plan,
                                (struct mount_op){.kind = OP_SYMLINK,
                                                  .dest = strdup(host),
                                                  .source = strdup(target)},
                                err);
                } else if (S_ISDIR(st.st_mode)) {
                        r = add(plan,
                                (struct mount_op){.kind = OP_BIND,
                                                  .dest = strdup(host),
                                                  .source = strdup(host),
                                                  .user_mount = -1},
                                err);
                } else {
                        continue;
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_bytes(struct mount_plan *plan, const char *dest, const char *contents, size_t size,
                     codecell_error *err)
{
        char *copy = malloc(size + 1);
        if (!copy)
                return err_sys(err, ENOMEM, "mount plan");
        memcpy(copy, contents, size);
        copy[size] = '\0';
        return add(plan,
                   (struct mount_op){
                           .kind = OP_FILE, .dest = strdup(dest), .source = copy, .size = size},
                   err);
}

static int add_file(struct mount_plan *plan, const char *dest, const char *contents,
                    codecell_error *err)
{
        return add_bytes(plan, dest, contents, strlen(contents), err);
}

/* A host file or directory at the same path, read-only; skipped when the host has none. */
static int add_host_file(struct mount_plan *plan, const char *path, bool device,
                         codecell_error *err)
{
        struct stat st;
        if (stat(path, &st) < 0)
                return 0; /* optional on this host */
        return add(plan,
                   (struct mount_op){.kind = OP_BIND,
                                     .dest = strdup(path),
                                     .source = strdup(path),
                                     .is_file = !S_ISDIR(st.st_mode),
                                     .devices = device,
                                     .user_mount = -1},
                   err);
}

uint64_t mount_op_attributes(const struct mount_op *op)
{
        uint64_t attr = MOUNT_ATTR_NOSUID;
        if (!op->devices)
                attr |= MOUNT_ATTR_NODEV;
        if (!op->writable)
                attr |= MOUNT_ATTR_RDONLY;
        if (op->noexec)
                attr |= MOUNT_ATTR_NOEXEC;
        return attr;
}

/* An exec bind (library code is mapped executable from it) that a read-write mount could
 * write into: refused, so nothing a guest writes ever runs. */
static int refuse_if_writable(const codecell_config *config, const char *what, const char *source,
                              codecell_error *err)
{
        for (size_t i = 0; i < config->n_mounts; i++)
                if (config->mounts[i].read_write && paths_overlap(source, config->mounts[i].source))
                        return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                                       "%s %s overlaps the read-write mount at %s: a folder the "
                                       "guest can write cannot hold code that runs",
                                       what, source, config->mounts[i].dest);
        return 0;
}

/* The interpreter's own tree when it is not under /usr (another build, in /opt/python3.12):
 * its prefix, the folder above its bin/, where it finds its standard library, at the same
 * path. Then the library folders at /codecell/lib/<i>, noexec unless "exec". */
static int add_interpreter_binds(struct mount_plan *plan, const codecell_config *config,
                                 codecell_error *err)
{
        int r = 0;
        if (config->interpreter && !paths_overlap(config->interpreter, "/usr")) {
                char prefix[PATH_MAX];
                snprintf(prefix, sizeof(prefix), "%s", config->interpreter);
                for (int up = 0; up < 2; up++) {
                        char *slash = strrchr(prefix, '/');
                        if (slash)
                                *slash = '\0';
                }
                const char *reserved = *prefix ? mount_dest_reserved(prefix) : "/";
                if (reserved)
                        return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                                       "interpreter %s: its prefix %s overlaps the sandbox's own "
                                       "%s (install it under a folder of its own, /opt/NAME/bin)",
                                       config->interpreter, *prefix ? prefix : "/", reserved);
                for (size_t i = 0; i < config->n_mounts; i++)
                        if (paths_overlap(prefix, config->mounts[i].dest))
                                return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                                               "interpreter %s: its prefix %s overlaps the mount "
                                               "at %s",
                                               config->interpreter, prefix, config->mounts[i].dest);
                r = refuse_if_writable(config, "interpreter prefix", prefix, err);
                if (r == 0)
                        r = add(plan,
                                (struct mount_op){.kind = OP_BIND,
                                                  .dest = strdup(prefix),
                                                  .source = strdup(prefix),
                                                  .user_mount = -1},
                                err);
        }
        for (size_t i = 0; r == 0 && i < config->n_libraries; i++) {
                const struct cc_library *lib = &config->libraries[i];
                char dest[64];
                snprintf(dest, sizeof(dest), INTERPRETER_LIBRARY_DEST, i);
                if (lib->exec)
                        r = refuse_if_writable(config, "library", lib->source, err);
                if (r == 0)
                        r = add(plan,
                                (struct mount_op){.kind = OP_BIND,
                                                  .dest = strdup(dest),
                                                  .source = strdup(lib->source),
                                                  .noexec = !lib->exec,
                                                  .user_mount = -1},
                                err);
        }
        return r;
}

int mount_plan_build(struct mount_plan *plan, const codecell_config *config, uid_t inner_uid,
                     codecell_error *err)
{
        memset(plan, 0, sizeof(*plan));
        char opts[128];
        int r = add(plan,
                    (struct mount_op){.kind = OP_BIND,
                                      .dest = strdup("/usr"),
                                      .source = strdup("/usr"),
                                      .user_mount = -1},
                    err);
        if (r == 0)
                r = add_top_level_links(plan, err);
        /* A minimal /etc: names for the sandbox's own ids and host name, no resolver. */
        if (r == 0)
                r = add_file(plan, "/etc/hostname", "codecell\n", err);
        if (r == 0)
                r = add_file(plan, "/etc/hosts", etc_hosts, err);
        if (r == 0)
                r = add_file(plan, "/etc/passwd", etc_passwd, err);
        if (r == 0)
                r = add_file(plan, "/etc/group", etc_group, err);
        if (r == 0)
                r = add_file(plan, "/etc/nsswitch.conf", etc_nsswitch, err);
        if (r == 0)
                r = add_host_file(plan, "/etc/ld.so.cache", false, err);
        if (r == 0)
                r = add_host_file(plan, "/etc/localtime", false, err);
        /* A network cell's guest checks the servers it reaches over TLS itself, against the
         * system's roots: public certificates, read-only (never /etc/ssl/private). Debian's
         * and Fedora's places; a host without them has none to give. With terminate_tls, the
         * cell also writes the roots and its own CA into one bundle (cell_plan.c), which the
         * guest's environment names. */
        static const char *const trust_stores[] = {"/etc/ssl/certs", "/etc/pki/tls/certs",
                                                   "/etc/pki/ca-trust/extracted"};
        for (size_t i = 0;
             r == 0 && config_network(config) && i < sizeof(trust_stores) / sizeof(trust_stores[0]);
             i++)
                r = add_host_file(plan, trust_stores[i], false, err);
        const struct egress_policy *policy = config_network_policy(config);
        if (r == 0 && policy && policy->terminate_tls)
                r = add_bytes(plan, MOUNT_PLAN_CA_BUNDLE, "", 0, err);
        /* What files under /usr link to in /etc, read-only, or the links dangle: Debian's
         * alternatives (libblas.so.3, which numpy loads; a folder of symbolic links that
         * name the chosen implementations) and matplotlib's defaults (its mpl-data/matplotlibrc,
         * without which it refuses to import). */
        static const char *const usr_links_into_etc[] = {"/etc/alternatives", "/etc/matplotlibrc"};
        for (size_t i = 0; r == 0 && i < sizeof(usr_links_into_etc) / sizeof(usr_links_into_etc[0]);
             i++)
                r = add_host_file(plan, usr_links_into_etc[i], false, err);
        /* A minimal /dev. */
        static const char *const devices[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
                                              "/dev/urandom"};
        for (size_t i = 0; r == 0 && i < sizeof(devices) / sizeof(devices[0]); i++)
                r = add_host_file(plan, devices[i], true, err);
        static const char *const dev_links[][2] = {
                {"/dev/fd", "/proc/self/fd"},
                {"/dev/stdin", "/proc/self/fd/0"},
                {"/dev/stdout", "/proc/self/fd/1"},
                {"/dev/stderr", "/proc/self/fd/2"},
        };
        for (size_t i = 0; r == 0 && i < sizeof(dev_links) / sizeof(dev_links[0]); i++)
                r = add(plan,
                        (struct mount_op){.kind = OP_SYMLINK,
                                          .dest = strdup(dev_links[i][0]),
                                          .source = strdup(dev_links[i][1])},
                        err);
        if (r == 0)
                r = add(plan, (struct mount_op){.kind = OP_PROC, .dest = strdup("/proc")}, err);
        if (r == 0) {
                snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=16384,mode=1777",
                         (unsigned long long)config->limits[CODECELL_LIMIT_TMP_BYTES]);
                r = add(plan,
                        (struct mount_op){
                                .kind = OP_TMPFS, .dest = strdup("/tmp"), .options = strdup(opts)},
                        err);
        }
        if (r == 0) {
                snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=16384,mode=0700,uid=%u,gid=%u",
                         (unsigned long long)config->limits[CODECELL_LIMIT_WORK_BYTES],
                         (unsigned)inner_uid, (unsigned)inner_uid);
                r = add(plan,
                        (struct mount_op){
                                .kind = OP_TMPFS, .dest = strdup("/work"), .options = strdup(opts)},
                        err);
        }
        const struct runtime *rt = config->runtime;
        if (r == 0)
                r = add_file(plan, rt->prelude_path, rt->prelude, err);
        if (r == 0 && rt->compiled && *rt->compiled_size > 0)
                r = add_bytes(plan, rt->compiled_path, rt->compiled, *rt->compiled_size, err);
        /* A forked cell's zygote loads its fork server from /codecell and reads there the walls
         * its children put up (cell_plan.c writes them once the filter and rules exist). */
        if (r == 0 && config_forks(config))
                r = add_bytes(plan, ZYGOTE_SO_PATH, codecell_zygote_so, codecell_zygote_so_size,
                              err);
        if (r == 0 && config_forks(config) &&
            (r = add_bytes(plan, ZYGOTE_INIT_PATH, codecell_init_bin, codecell_init_bin_size,
                           err)) == 0)
                plan->ops[plan->n_ops - 1].program = true;
        if (r == 0 && config_forks(config))
                r = add_bytes(plan, ZYGOTE_WALLS_PATH, "", 0, err);
        /* The user's mounts get what the sandbox's own file system and the interpreter's
         * folders leave. */
        size_t zygote_ops = config_forks(config) ? 3 : 0;
        size_t room =
                (MOUNT_PLAN_MAX_OPS - 2) - (plan->n_ops - zygote_ops) - config->n_libraries - 1;
        if (r == 0 && config->n_mounts > room)
                r = err_set(err, CODECELL_ERR_INVALID, E2BIG, "too many mounts (at most %zu)",
                            room);
        for (size_t i = 0; r == 0 && i < config->n_mounts; i++) {
                const struct cc_mount *m = &config->mounts[i];
                r = add(plan,
                        (struct mount_op){.kind = OP_BIND,
                                          .dest = strdup(m->dest),
                                          .source = strdup(m->source),
                                          .writable = m->read_write,
                                          /* exec only where the host put libraries
                                           * no guest can write (codecell_mount_mode) */
                                          .noexec = !m->exec,
                                          .user_mount = (int)i},
                        err);
        }
        if (r == 0)
                r = add_interpreter_binds(plan, config, err);
        if (r < 0)
                mount_plan_free(plan);
        return r;
}

int mount_plan_set_contents(struct mount_plan *plan, const char *dest, const void *contents,
                            size_t size)
{
        for (size_t i = 0; i < plan->n_ops; i++) {
                struct mount_op *op = &plan->ops[i];
                if (op->kind != OP_FILE || strcmp(op->dest, dest) != 0)
                        continue;
                char *copy = malloc(size + 1);
                if (!copy)
                        return -ENOMEM;
                memcpy(copy, contents, size);
                copy[size] = '\0';
                free(op->source);
                op->source = copy;
                op->size = size;
                return 0;
        }
        return -ENOENT;
}

void mount_plan_free(struct mount_plan *plan)
{
        for (size_t i = 0; i < plan->n_ops; i++) {
                free(plan->ops[i].dest);
                free(plan->ops[i].source);
                free(plan->ops[i].options);
        }
        plan->n_ops = 0;
}

/* ---- in the sandbox: no allocation below this line ------------------------------------- */

void failure_append(struct child_failure *fail, const char *s)
{
        size_t used = strnlen(fail->what, sizeof(fail->what));
        while (*s && used + 1 < sizeof(fail->what))
                fail->what[used++] = *s++;
        fail->what[used] = '\0';
}

static int fail_with(struct child_failure *fail, const char *what, const char *path)
{
        fail->errno_value = errno;
        fail->what[0] = '\0';
        failure_append(fail, what);
        if (path) {
                failure_append(fail, " ");
                failure_append(fail, path);
        }
        return -fail->errno_value;
}

/* STAGE + dest into buf. */
static int staged(char *buf, size_t size, const char *dest)
{
        size_t a = strlen(STAGE), b = strlen(dest);
        if (a + b + 1 > size)
                return -ENAMETOOLONG;
        memcpy(buf, STAGE, a);
        memcpy(buf + a, dest, b + 1);
        return 0;
}

/* mkdir -p of every parent of path (and of path itself when `self`). */
static int make_parents(char *path, bool self)
{
        size_t start = strlen(STAGE) + 1;
        for (char *p = path + start; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                int r = mkdir(path, 0755);
                *p = '/';
                if (r < 0 && errno != EEXIST)
                        return -1;
        }
        if (self && mkdir(path, 0755) < 0 && errno != EEXIST)
                return -1;
        return 0;
}

static int write_all(int fd, const char *s, size_t len)
{
        while (len > 0) {
                ssize_t n = write(fd, s, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -1;
                }
                s += n;
                len -= (size_t)n;
        }
        return 0;
}

/* A detached copy of a host tree with the op's mount flags, made in this mount namespace. */
static int clone_tree(const struct mount_op *op)
{
        int fd = (int)syscall(SYS_open_tree, AT_FDCWD, op->source,
                              OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        if (fd < 0)
                return -1;
        struct mount_attr attr = {.attr_set = mount_op_attributes(op)};
        if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) <
            0) {
                int saved = errno;
                close(fd);
                errno = saved;
                return -1;
        }
        return fd;
}

static int apply_op(const struct mount_op *op, int tree_fd, struct child_failure *fail)
{
        char path[4096];
        if (staged(path, sizeof(path), op->dest) < 0) {
                errno = ENAMETOOLONG;
                return fail_with(fail, "path too long:", op->dest);
        }
        bool is_dir = op->kind == OP_DIR || op->kind == OP_TMPFS || op->kind == OP_PROC ||
                      (op->kind == OP_BIND && !op->is_file);
        if (make_parents(path, is_dir) < 0)
                return fail_with(fail, "mkdir", op->dest);
        switch (op->kind) {
        case OP_DIR:
                return 0;
        case OP_FILE: {
                int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                              op->program ? 0755 : 0644);
                if (fd < 0)
                        return fail_with(fail, "create", op->dest);
                int r = write_all(fd, op->source, op->size);
                close(fd);
                return r < 0 ? fail_with(fail, "write", op->dest) : 0;
        }
        case OP_SYMLINK:
                return symlink(op->source, path) < 0 ? fail_with(fail, "symlink", op->dest) : 0;
        case OP_BIND:
                if (op->is_file) {
                        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                        if (fd < 0)
                                return fail_with(fail, "create", op->dest);
                        close(fd);
                }
                if (syscall(SYS_move_mount, tree_fd, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) <
                    0)
                        return fail_with(fail, "bind", op->dest);
                return 0;
        case OP_TMPFS:
                /* noexec: what the guest writes here is never a program (nor a library the
                 * loader maps executable). */
                if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, op->options) <
                    0)
                        return fail_with(fail, "mount tmpfs", op->dest);
                return 0;
        case OP_PROC:
                if (mount("proc", path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                        return fail_with(fail, "mount proc", op->dest);
                return 0;
        }
        return 0;
}

int mount_plan_apply(const struct mount_plan *plan, const int *tree_fds, struct child_failure *fail)
{
        int fds[MOUNT_PLAN_MAX_OPS];
        /* Nothing we do here may propagate back to the host's mount namespace. */
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return fail_with(fail, "make / private", NULL);
        for (size_t i = 0; i < plan->n_ops; i++) {
                fds[i] = -1;
                if (plan->ops[i].kind != OP_BIND)
                        continue;
                fds[i] = tree_fds && tree_fds[i] >= 0 ? tree_fds[i] : clone_tree(&plan->ops[i]);
                if (fds[i] < 0)
                        return fail_with(fail, "open", plan->ops[i].source);
        }
        if (mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV,
                  "size=1m,nr_inodes=4096,mode=0755") < 0)
                return fail_with(fail, "mount root tmpfs on", STAGE);
        for (size_t i = 0; i < plan->n_ops; i++) {
                int r = apply_op(&plan->ops[i], fds[i], fail);
                if (fds[i] >= 0)
                        close(fds[i]);
                if (r < 0)
                        return r;
        }
        /* pivot_root(".", ".") stacks the old root on the new one; detaching it leaves only
         * the new root (the runc way, no put_old directory needed). */
        if (chdir(STAGE) < 0 || syscall(SYS_pivot_root, ".", ".") < 0)
                return fail_with(fail, "pivot_root", NULL);
        if (umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
                return fail_with(fail, "detach the old root", NULL);
        /* The root itself (/etc, /codecell, the mount points) is read-only. */
        if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) <
            0)
                return fail_with(fail, "remount / read-only", NULL);
        return 0;
}
