#include "landlock.h"
#include "landlock_proc_files.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Debian 12's kernel headers stop at ABI 2; the kernel we run on may offer more. The values
 * are fixed by the kernel's ABI, so they are safe to spell out here. */
#define LL_FS_REFER (1ULL << 13)                  /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14)               /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15)              /* ABI 5 */
#define LL_NET_BIND_TCP (1ULL << 0)               /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ULL << 1)            /* ABI 4 */
#define LL_RULE_NET_PORT 2                        /* ABI 4 */
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)               /* ABI 6 */
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

/* The kernel reads as much of this as the size we pass says; later fields must be zero or
 * absent for older ABIs. */
struct ll_ruleset_attr {
        uint64_t handled_access_fs;
        uint64_t handled_access_net;
        uint64_t scoped;
};

struct ll_net_port_attr {
        uint64_t allowed_access;
        uint64_t port;
} __attribute__((packed));

struct ll_path_beneath_attr {
        uint64_t allowed_access;
        int32_t parent_fd;
} __attribute__((packed));

#define LL_FS_V1                                                                                   \
        (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |                              \
         LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |                              \
         LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |                          \
         LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |                              \
         LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |                              \
         LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |                            \
         LANDLOCK_ACCESS_FS_MAKE_SYM)

#define FILE_RIGHTS                                                                                \
        (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |                              \
         LANDLOCK_ACCESS_FS_READ_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)

int landlock_abi(void)
{
        long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        return abi < 0 ? 0 : (int)abi;
}

const char *const landlock_proc_self_files[] = {LANDLOCK_PROC_SELF_FILES, NULL};

int landlock_plan_add_copy(struct landlock_plan *plan, const char *path, size_t len,
                           enum landlock_grant grant)
{
        if (plan->storage_used + len + 1 > sizeof(plan->storage))
                return -E2BIG;
        char *copy = plan->storage + plan->storage_used;
        memcpy(copy, path, len);
        copy[len] = '\0';
        plan->storage_used += len + 1;
        return landlock_plan_add(plan, copy, grant);
}

int landlock_plan_add(struct landlock_plan *plan, const char *path, enum landlock_grant grant)
{
        if (plan->n_rules >= LANDLOCK_PLAN_MAX_RULES)
                return -E2BIG;
        plan->rules[plan->n_rules++] = (struct landlock_rule){.path = path, .grant = grant};
        return 0;
}

static uint64_t handled_fs(int abi)
{
        uint64_t fs = LL_FS_V1;
        if (abi >= 2)
                fs |= LL_FS_REFER;
        if (abi >= 3)
                fs |= LL_FS_TRUNCATE;
        if (abi >= 5)
                fs |= LL_FS_IOCTL_DEV;
        return fs;
}

static uint64_t grant_access(enum landlock_grant grant, uint64_t handled)
{
        const uint64_t read = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
        const uint64_t file_write = LANDLOCK_ACCESS_FS_WRITE_FILE | LL_FS_TRUNCATE;
        uint64_t access = 0;
        switch (grant) {
        case GRANT_READ:
                access = read;
                break;
        case GRANT_LIST:
                access = LANDLOCK_ACCESS_FS_READ_DIR;
                break;
        case GRANT_WRITE:
                access = read | file_write | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                         LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_DIR |
                         LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
                         LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_SYM | LL_FS_REFER;
                break;
        case GRANT_WRITE_FILES:
                access = read | file_write | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                         LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_DIR |
                         LANDLOCK_ACCESS_FS_MAKE_REG | LL_FS_REFER;
                break;
        case GRANT_DEVICE:
                access = LANDLOCK_ACCESS_FS_READ_FILE | file_write | LL_FS_IOCTL_DEV;
                break;
        case GRANT_EXECUTE:
                access = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_EXECUTE;
                break;
        case GRANT_EXECUTE_TREE:
                access = read | LANDLOCK_ACCESS_FS_EXECUTE;
                break;
        }
        return access & handled;
}

int landlock_apply(const struct landlock_plan *plan, const char **ret_failed_path)
{
        *ret_failed_path = "ruleset";
        if (plan->abi <= 0)
                return -EOPNOTSUPP;
        struct ll_ruleset_attr attr = {.handled_access_fs = handled_fs(plan->abi)};
        size_t attr_size = sizeof(uint64_t);
        if (plan->abi >= 4 && !plan->network) {
                /* Every bind and connect is refused but a network cell's connect to its
                 * proxy's port (the namespace refuses them too: it has only its loopback,
                 * empty or with the proxy's listener; this holds if it were ever shared). */
                attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
                attr_size = 2 * sizeof(uint64_t);
        }
        if (plan->abi >= 6) {
                /* Abstract UNIX sockets and signals stay inside this sandbox's domain. */
                attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
                attr_size = sizeof(attr);
        }
        int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
        if (ruleset < 0)
                return -errno;
        int r = 0;
        if (attr.handled_access_net && plan->connect_port) {
                struct ll_net_port_attr np = {.allowed_access = LL_NET_CONNECT_TCP,
                                              .port = plan->connect_port};
                if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_NET_PORT, &np, 0) < 0) {
                        r = -errno;
                        *ret_failed_path = "the proxy's port";
                        goto out;
                }
        }
        for (size_t i = 0; i < plan->n_rules; i++) {
                const struct landlock_rule *rule = &plan->rules[i];
                int fd = open(rule->path, O_PATH | O_CLOEXEC);
                if (fd < 0) {
                        r = -errno;
                        *ret_failed_path = rule->path;
                        goto out;
                }
                struct ll_path_beneath_attr pb = {
                        .allowed_access = grant_access(rule->grant, attr.handled_access_fs),
                        .parent_fd = fd,
                };
                /* A rule on a file may hold only the rights that apply to files. */
                struct stat st;
                if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
                        pb.allowed_access &= FILE_RIGHTS;
                long k =
                        syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
                int saved = errno;
                close(fd);
                if (k < 0) {
                        r = -saved;
                        *ret_failed_path = rule->path;
                        goto out;
                }
        }
        *ret_failed_path = "restrict_self";
        if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
                r = -errno;
out:
        close(ruleset);
        return r;
}
