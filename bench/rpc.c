/* bench/rpc: the round trip of SB.call("noop") from guest code, measured inside the guest:
 * 10,000 calls to a C handler and 200 to a command tool, in one run. Prints median and p99. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codecell.h"

static int noop(const char *args, char **ret_json, char **ret_error, void *userdata)
{
        (void)args, (void)ret_error, (void)userdata;
        *ret_json = strdup("null");
        return *ret_json ? 0 : -1;
}

static const char guest[] = "n = %d\n"
                            "t = Array.new(n) do\n"
                            "  a = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)\n"
                            "  SB.call(%s)\n"
                            "  Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond) - a\n"
                            "end.sort\n"
                            "[t[n / 2] / 1000.0, t[(n * 0.99).to_i] / 1000.0]\n";

static void measure(codecell_cell *cell, const char *label, const char *call, int n)
{
        char code[1024];
        snprintf(code, sizeof(code), guest, n, call);
        codecell_result *res = NULL;
        codecell_error err;
        if (codecell_cell_run(cell, code, strlen(code), &res, &err) < 0) {
                fprintf(stderr, "rpc: %s\n", err.message);
                exit(2);
        }
        char *text = codecell_result_to_json(res, false);
        json_t *obj = json_loads(text, 0, NULL);
        json_t *v = json_object_get(obj, "value");
        if (codecell_result_status(res) != CODECELL_STATUS_OK || json_array_size(v) != 2) {
                fprintf(stderr, "rpc: %s\n", text);
                exit(2);
        }
        printf("%-28s %8d %12.1f %12.1f\n", label, n, json_real_value(json_array_get(v, 0)),
               json_real_value(json_array_get(v, 1)));
        json_decref(obj);
        free(text);
        codecell_result_free(res);
}

int main(void)
{
        codecell_error err;
        codecell_config *config = codecell_config_new("ruby", &err);
        codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
        codecell_config_set_limit(config, CODECELL_LIMIT_TOOL_CALLS, 100000, &err);
        codecell_config_set_limit(config, CODECELL_LIMIT_TIMEOUT_MS, 120000, &err);
        codecell_config_set_limit(config, CODECELL_LIMIT_CPU_MS, 120000, &err);
        codecell_cell *cell = codecell_cell_new(config, &err);
        codecell_config_free(config);
        if (!cell ||
            codecell_cell_add_tool(cell, "noop", "Does nothing.", NULL, noop, NULL, &err) < 0) {
                fprintf(stderr, "rpc: %s\n", err.message);
                return 2;
        }
        char dir[] = "/tmp/codecell-rpc-XXXXXX", path[64], tools[64];
        if (!mkdtemp(dir))
                return 2;
        snprintf(path, sizeof(path), "%s/noop.sh", dir);
        snprintf(tools, sizeof(tools), "%s/tools.json", dir);
        FILE *f = fopen(path, "w");
        fputs("#!/bin/sh\ncat >/dev/null\necho null\n", f);
        fclose(f);
        chmod(path, 0755);
        f = fopen(tools, "w");
        fputs("{\"tools\":[{\"name\":\"noop.command\",\"command\":[\"./noop.sh\"]}]}", f);
        fclose(f);
        if (codecell_cell_load_tools(cell, tools, &err) < 0) {
                fprintf(stderr, "rpc: %s\n", err.message);
                return 2;
        }
        printf("SB.call round trip, measured in the guest (µs)\n");
        printf("%-28s %8s %12s %12s\n", "tool", "calls", "median µs", "p99 µs");
        measure(cell, "C handler (noop)", "\"noop\"", 10000);
        measure(cell, "command tool (/bin/sh)", "\"noop.command\"", 200);
        codecell_cell_free(cell);
        unlink(path);
        unlink(tools);
        rmdir(dir);
        return 0;
}
