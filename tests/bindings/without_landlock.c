/* without_landlock COMMAND [ARG…]: runs COMMAND on what looks like a kernel without Landlock.
 * A seccomp filter answers ENOSYS to the three Landlock calls, as a kernel built without it
 * does, so that the bindings' on_unsupported tests see the real path of a missing layer. */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
        if (argc < 2) {
                fprintf(stderr, "usage: without_landlock COMMAND [ARG...]\n");
                return 2;
        }
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        const char *calls[] = {"landlock_create_ruleset", "landlock_add_rule",
                               "landlock_restrict_self"};
        for (size_t i = 0; ctx && i < sizeof(calls) / sizeof(calls[0]); i++) {
                int nr = seccomp_syscall_resolve_name(calls[i]);
                if (nr == __NR_SCMP_ERROR ||
                    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0) < 0) {
                        fprintf(stderr, "without_landlock: cannot filter %s\n", calls[i]);
                        return 1;
                }
        }
        if (!ctx || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || seccomp_load(ctx) < 0) {
                perror("without_landlock: seccomp");
                return 1;
        }
        seccomp_release(ctx);
        execvp(argv[1], argv + 1);
        perror(argv[1]);
        return 127;
}
