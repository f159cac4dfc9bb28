/* A network cell's sandboxes, seen from the engine (linked against the static library, on a
 * real cell's plan): every one, exec'd or forked, a run's or a session's kernel, comes with the
 * proxy's listener (proxy_fd), each its own, closed with the sandbox; a cell without a policy
 * gets none. And the C API's codecell_config_set_network: an object or NULL, nothing else. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cell.h"
#include "e2e.h"
#include "languages.h"
#include "proxy_listener.h"
#include "standby.h"

static void check_setter(void)
{
        codecell_error err = {0};
        codecell_config *config = codecell_config_new(language, &err);
        CHECK(codecell_config_set_network(config, "{\"allow\": [\"example.test\"]}", &err) == 0);
        CHECK(config_network(config) != NULL);
        CHECK(codecell_config_set_network(config, "[\"example.test\"]", &err) < 0);
        CHECK(err.kind == CODECELL_ERR_INVALID && strstr(err.message, "must be an object"));
        CHECK(codecell_config_set_network(config, "{\"allow\": ", &err) < 0);
        CHECK(strstr(err.message, "not JSON") != NULL);
        /* A refused one leaves the policy as it was. */
        CHECK(config_network(config) != NULL);
        CHECK(codecell_config_set_network(config, NULL, &err) == 0);
        CHECK(config_network(config) == NULL);
        codecell_config_free(config);
}

static codecell_cell *new_cell(codecell_start start, bool network)
{
        codecell_error err = {0};
        codecell_config *config = codecell_config_new(language, &err);
        codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
        CHECK(codecell_config_set_start(config, start, &err) == 0);
        CHECK(codecell_config_set_pool(config, 0, &err) == 0);
        if (network)
                CHECK(codecell_config_set_network(config, "{\"allow\": [\"example.test\"]}",
                                                  &err) == 0);
        codecell_cell *cell = codecell_cell_new(config, &err);
        if (!cell)
                fprintf(stderr, "cell: %s\n", err.message);
        codecell_config_free(config);
        return cell;
}

/* The inode of the socket fd names, or 0. */
static ino_t inode_of(int fd)
{
        struct stat st;
        return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

static void check_sandboxes(codecell_start start, bool network)
{
        codecell_error err = {0};
        codecell_cell *cell = new_cell(start, network);
        if (!cell)
                return;
        struct standby *run = NULL, *kernel = NULL;
        CHECK(standby_start(&cell->plan, false, &run, &err) == 0);
        CHECK(standby_start(&cell->plan, true, &kernel, &err) == 0);
        if (!run || !kernel) {
                fprintf(stderr, "standby: %s\n", err.message);
                standby_free(run);
                standby_free(kernel);
                codecell_cell_free(cell);
                return;
        }
        if (network) {
                int fds[2] = {run->sb.proxy_fd, kernel->sb.proxy_fd};
                for (int i = 0; i < 2; i++) {
                        CHECK(fds[i] >= 0 && proxy_listener_check(fds[i]));
                        /* The engine's only: nothing is queued until a guest connects. */
                        CHECK(fcntl(fds[i], F_SETFL, O_NONBLOCK) == 0);
                        CHECK(accept(fds[i], NULL, NULL) < 0 && errno == EAGAIN);
                }
                /* Two sockets on the same 127.0.0.1:3128: two namespaces. */
                CHECK(inode_of(fds[0]) != inode_of(fds[1]));
                standby_free(run);
                standby_free(kernel);
                /* Closed with their sandboxes (nothing else opened in between). */
                CHECK(fcntl(fds[0], F_GETFD) < 0 && errno == EBADF);
                CHECK(fcntl(fds[1], F_GETFD) < 0 && errno == EBADF);
        } else {
                CHECK(run->sb.proxy_fd == -1 && kernel->sb.proxy_fd == -1);
                standby_free(run);
                standby_free(kernel);
        }
        codecell_cell_free(cell);
}

/* Through the public API: the guest's environment names the proxy in a network cell only. */
static void check_environment(codecell_start start, bool network)
{
        codecell_error err = {0};
        codecell_cell *cell = new_cell(start, network);
        if (!cell)
                return;
        const char *code =
                L("[ENV[\"HTTPS_PROXY\"], ENV[\"all_proxy\"], ENV[\"NO_PROXY\"]]",
                  "import os\n[os.environ.get('HTTPS_PROXY'), os.environ.get('all_proxy'), "
                  "os.environ.get('NO_PROXY')]");
        codecell_result *result = NULL;
        CHECK(codecell_cell_run(cell, code, strlen(code), &result, &err) == 0);
        if (result) {
                const char *value = codecell_result_value(result);
                const char *want =
                        network ? "[\"http://127.0.0.1:3128\",\"http://127.0.0.1:3128\",\"\"]"
                                : "[null,null,null]";
                CHECK_STR(value, want);
                codecell_result_free(result);
        }
        codecell_cell_free(cell);
}

int main(int argc, char **argv)
{
        pick_language(argc, argv);
        check_setter();
        for (int network = 0; network < 2; network++) {
                check_sandboxes(CODECELL_START_FORK, network);
                check_sandboxes(CODECELL_START_EXEC, network);
                check_environment(CODECELL_START_FORK, network);
                check_environment(CODECELL_START_EXEC, network);
        }
        CHECK_DONE();
}
