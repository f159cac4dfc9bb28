/* The folder store of session journals (run/session_store_dir.h): what is put comes back, is
 * 0600, leaves no temp file, and is removed; a key cannot name a path; a folder others can
 * write, a link, or a folder of another user is refused; as root and, when root, as nobody. */
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "session_store_dir.h"

static size_t entries(const char *path)
{
        size_t n = 0;
        DIR *d = opendir(path);
        for (struct dirent *e; d && (e = readdir(d));)
                n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
        if (d)
                closedir(d);
        return n;
}

/* The cases run by the current user in folder base (made by them). */
static void store_cases(const char *base)
{
        char path[512], why[300];
        struct session_store_dir s;
        snprintf(path, sizeof path, "%s/state", base);
        CHECK(session_store_dir_open(&s, path, why, sizeof why) == 0);
        struct stat st;
        CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0700);

        CHECK(session_store_dir_put(&s, "tok:../../etc/x", "one\0two", 7, why, sizeof why) == 0);
        CHECK(session_store_dir_put(&s, "tok:../../etc/x", "three", 5, why, sizeof why) == 0);
        char *buf = NULL;
        size_t len = 0;
        CHECK(session_store_dir_get(&s, "tok:../../etc/x", &buf, &len, why, sizeof why) == 1);
        CHECK(len == 5 && buf && memcmp(buf, "three", 5) == 0);
        free(buf);
        CHECK(entries(path) == 1); /* no temp file left, no path made from the key */
        char file[700];
        snprintf(file, sizeof file, "%s/746f6b3a2e2e2f2e2e2f6574632f78.ccj", path);
        CHECK(stat(file, &st) == 0 && (st.st_mode & 0777) == 0600 && st.st_uid == geteuid());
        CHECK(session_store_dir_get(&s, "other", &buf, &len, why, sizeof why) == 0);
        CHECK(session_store_dir_remove(&s, "tok:../../etc/x", why, sizeof why) == 0);
        CHECK(session_store_dir_remove(&s, "tok:../../etc/x", why, sizeof why) == 0);
        CHECK(session_store_dir_get(&s, "tok:../../etc/x", &buf, &len, why, sizeof why) == 0);
        CHECK(session_store_dir_put(&s, "", "x", 1, why, sizeof why) == -1);
        char longkey[200];
        memset(longkey, 'k', sizeof longkey - 1);
        longkey[sizeof longkey - 1] = '\0';
        CHECK(session_store_dir_put(&s, longkey, "x", 1, why, sizeof why) == -1);
        CHECK(strstr(why, "too long") != NULL);
        session_store_dir_close(&s);

        /* A folder others can write is refused, with the reason. */
        CHECK(chmod(path, 0777) == 0);
        CHECK(session_store_dir_open(&s, path, why, sizeof why) == -1);
        CHECK(strstr(why, "chmod 0700") != NULL);
        CHECK(chmod(path, 0700) == 0);
        /* A link to a folder is refused. */
        char link[600];
        snprintf(link, sizeof link, "%s/link", base);
        CHECK(symlink(path, link) == 0);
        CHECK(session_store_dir_open(&s, link, why, sizeof why) == -1);
        /* A folder the store cannot write: put fails, nothing is stored. */
        if (geteuid() != 0) {
                CHECK(session_store_dir_open(&s, path, why, sizeof why) == 0);
                CHECK(chmod(path, 0500) == 0);
                CHECK(session_store_dir_put(&s, "k", "x", 1, why, sizeof why) == -1);
                CHECK(strstr(why, "cannot be written") != NULL);
                CHECK(chmod(path, 0700) == 0);
                CHECK(session_store_dir_get(&s, "k", &buf, &len, why, sizeof why) == 0);
                session_store_dir_close(&s);
        }
}

int main(void)
{
        char base[] = "/tmp/cc-store-test-XXXXXX";
        CHECK(mkdtemp(base) != NULL);
        store_cases(base);
        if (geteuid() == 0) {
                /* A folder of root's is refused to nobody; nobody's own works. */
                char nb[] = "/tmp/cc-store-nobody-XXXXXX";
                CHECK(mkdtemp(nb) != NULL && chown(nb, 65534, 65534) == 0);
                pid_t pid = fork();
                if (pid == 0) {
                        if (setgid(65534) != 0 || setuid(65534) != 0)
                                _exit(2);
                        char path[600], why[300];
                        struct session_store_dir s;
                        snprintf(path, sizeof path, "%s/state", base);
                        CHECK(session_store_dir_open(&s, path, why, sizeof why) == -1);
                        store_cases(nb);
                        _exit(check_failures ? 1 : 0);
                }
                int status = 0;
                CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
                      WEXITSTATUS(status) == 0);
                char cmd[200];
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", nb);
                CHECK(system(cmd) == 0);
        } else {
                printf("not root: the case as nobody is not run\n");
        }
        char cmd[200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
        CHECK(system(cmd) == 0);
        CHECK_DONE();
}
