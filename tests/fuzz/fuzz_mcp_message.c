/* libFuzzer: one MCP message (JSON-RPC parsing, then every method's handling of its params,
 * tools/call argument checks included) on arbitrary bytes. The server is stopped before the
 * first input, so a well-formed tools/call is refused after its arguments are checked instead
 * of starting a sandbox. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp.h"

static struct mcp_server *server;
static struct mcp_client *client;

/* Answers are encoded, as a transport would, then dropped. */
static void drop(struct mcp_sink *sink, const json_t *message)
{
        (void)sink;
        char *text = jsonrpc_text(message);
        if (!text)
                abort();
        free(text);
}

static struct mcp_sink sink = {.send = drop};

static void set_up(void)
{
        static const char config[] =
                "{\"cells\": [{\"name\": \"ruby\", \"language\": \"ruby\", \"pool\": 0},"
                " {\"name\": \"py\", \"language\": \"python\", \"pool\": 0,"
                "  \"sessions\": {\"enabled\": false}}]}";
        char path[] = "/tmp/codecell-fuzz-mcp-XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0 || write(fd, config, strlen(config)) != (ssize_t)strlen(config))
                abort();
        close(fd);
        codecell_error err;
        codecell_cellset *cells = codecell_cellset_load(path, 0, &err);
        unlink(path);
        struct mcp_server_options o = {.transport = "stdio"};
        if (!cells || !(server = mcp_server_new(cells, &o)) || !(client = mcp_client_new(server)))
                abort();
        mcp_server_stop(server);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (!server)
                set_up();
        mcp_handle_text(server, client, (const char *)data, size, &sink);
        return 0;
}
