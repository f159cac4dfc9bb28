/* libFuzzer: one MCP message (JSON-RPC parsing, then every method's handling of its params,
 * tools/call argument checks included) on arbitrary bytes. The server is stopped before the
 * first input, so a well-formed tools/call is refused after its arguments are checked instead
 * of starting a sandbox. Every request, and every text that is not a message, must get exactly
 * one answer, and it must be JSON; notifications and responses none: otherwise abort(). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp.h"

static struct mcp_server *server;
static struct mcp_client *client;

/* What the server sent for the current input. */
static unsigned answers, notes;

/* Each message is checked, as a client would read it, then dropped. */
static int take(struct mcp_sink *sink, char *text, bool answer)
{
        (void)sink;
        json_error_t jerr;
        json_t *msg = json_loads(text, 0, &jerr);
        if (!msg || !json_is_object(msg))
                abort(); /* the server wrote something that is not a JSON object */
        bool is_answer = json_object_get(msg, "id") && !json_object_get(msg, "method") &&
                         (json_object_get(msg, "result") || json_object_get(msg, "error"));
        if (is_answer != answer)
                abort();
        if (answer)
                answers++;
        else
                notes++;
        json_decref(msg);
        free(text);
        return 0;
}

static struct mcp_sink sink = {.send = take};

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
        /* An instance name, so that handles of this and other instances are parsed too. */
        struct mcp_server_options o = {.transport = "stdio", .instance = "a"};
        if (!cells || !(server = mcp_server_new(cells, &o)) || !(client = mcp_client_new(server)))
                abort();
        mcp_server_stop(server);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (!server)
                set_up();
        answers = notes = 0;
        mcp_handle_text(server, client, (const char *)data, size, &sink);
        /* What the input was, as the transports see it. */
        enum jsonrpc_kind kind;
        json_t *error = NULL;
        json_t *msg = jsonrpc_parse((const char *)data, size, &kind, &error);
        unsigned expected = !msg || kind == JSONRPC_REQUEST ? 1 : 0;
        json_decref(msg);
        json_decref(error);
        if (answers != expected) {
                fprintf(stderr, "%u answers to a message that needs %u\n", answers, expected);
                abort();
        }
        return 0;
}
