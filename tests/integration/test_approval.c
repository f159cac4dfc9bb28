/* Approval before effects, through the public API and a real sandbox: a marked tool (a C
 * handler, and a command tool from a tools file whose effect is a file on the host) runs only
 * when the cell's approval callback accepts; a decline, an error, a late answer or no callback
 * at all never runs it and the guest rescues the ToolError; the run's clock is parked while the
 * callback waits; a tools file's "approval" is checked at load. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "languages.h"

static int sends; /* calls that reached the "send" handler */

static int send_mail(const char *args, char **ret_json, char **ret_error, void *userdata)
{
        (void)args, (void)ret_error, (void)userdata;
        sends++;
        *ret_json = strdup("\"sent\"");
        return 0;
}

/* What the approval callback does, and what it saw. */
static struct {
        int answer;         /* returned */
        const char *reason; /* set as *ret_reason when not NULL */
        unsigned sleep_ms;  /* before answering */
        int asked;
        char tool[80], args[200];
        uint64_t wait_ms;
        void *run_userdata;
} cb;

static int approve(const codecell_approval_request *req, char **ret_reason, void *userdata)
{
        CHECK(userdata == &cb);
        cb.asked++;
        snprintf(cb.tool, sizeof(cb.tool), "%s", req->tool);
        snprintf(cb.args, sizeof(cb.args), "%s", req->args_json);
        cb.wait_ms = req->wait_ms;
        cb.run_userdata = req->run_userdata;
        if (cb.sleep_ms)
                nanosleep(&(struct timespec){cb.sleep_ms / 1000, (cb.sleep_ms % 1000) * 1000000L},
                          NULL);
        if (cb.reason)
                *ret_reason = strdup(cb.reason);
        return cb.answer;
}

static void reset(int answer, const char *reason, unsigned sleep_ms)
{
        cb.answer = answer;
        cb.reason = reason;
        cb.sleep_ms = sleep_ms;
        cb.asked = 0;
        sends = 0;
}

static codecell_cell *new_cell(uint64_t timeout_ms, uint64_t approval_ms)
{
        codecell_error err = {0};
        codecell_config *config = codecell_config_new(language, &err);
        codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
        codecell_config_set_limit(config, CODECELL_LIMIT_TIMEOUT_MS, timeout_ms, &err);
        CHECK(codecell_config_set_limit(config, CODECELL_LIMIT_APPROVAL_MS, approval_ms, &err) ==
              0);
        codecell_cell *cell = codecell_cell_new(config, &err);
        if (!cell)
                fprintf(stderr, "cell: %s\n", err.message);
        codecell_config_free(config);
        return cell;
}

static char *run_with(codecell_cell *cell, const char *code, void *userdata)
{
        codecell_run_options options = {.userdata = userdata};
        codecell_result *res = NULL;
        codecell_error err = {0};
        int rc = codecell_cell_run_with(cell, code, strlen(code), &options, &res, &err);
        return result_text(rc, res, &err);
}

static void expect(codecell_cell *cell, const char *code, const char *prefix)
{
        char *json = run_with(cell, code, &cb);
        CHECK(starts_with(code, json, prefix));
        free(json);
}

/* Code that calls tool (args in the guest's syntax) and gives the call's answer, or the
 * rescued ToolError's message. */
static char *rescued(const char *tool, const char *args)
{
        static char code[600];
        snprintf(code, sizeof(code),
                 L("begin; SB.call('%s'%s%s); rescue SB::ToolError => e; 'refused: ' + "
                   "e.message; end",
                   "try:\n    m = sb.call('%s'%s%s)\nexcept sb.ToolError as e:\n    m = "
                   "'refused: ' + str(e)\nm"),
                 tool, *args ? ", " : "", args);
        return code;
}

static bool exists(const char *path)
{
        struct stat st;
        return lstat(path, &st) == 0;
}

static void write_file(const char *path, const char *text)
{
        FILE *f = fopen(path, "we");
        fputs(text, f);
        fclose(f);
}

/* A tools file's bad "approval" is refused at load, naming its path. */
static void refused_at_load(const char *dir)
{
        char path[512];
        codecell_error err = {0};
        codecell_cell *cell = new_cell(5000, 1000);
        snprintf(path, sizeof(path), "%s/bad.json", dir);
        write_file(path, "{\"tools\": [{\"name\": \"x\", \"command\": [\"/bin/true\"], "
                         "\"approval\": \"sometimes\"}]}");
        CHECK(codecell_cell_load_tools(cell, path, &err) < 0);
        CHECK(strstr(err.message, "tools[0].approval: must be \"always\""));
        write_file(path, "{\"mcp_servers\": {\"mem\": {\"command\": [\"/bin/true\"], "
                         "\"approval\": true}}}");
        CHECK(codecell_cell_load_tools(cell, path, &err) < 0);
        CHECK(strstr(err.message, "mem.approval: must be \"always\""));
        CHECK(codecell_cell_require_approval(cell, "nope", &err) < 0 &&
              strstr(err.message, "no tool of that name"));
        codecell_cell_free(cell);
        unlink(path);
}

/* Every tool of an MCP server marked "approval": "always" waits too. */
static void upstream_marked(const char *dir)
{
        char path[512], text[1024];
        codecell_error err = {0};
        snprintf(path, sizeof(path), "%s/upstream.json", dir);
        snprintf(text, sizeof(text),
                 "{\"mcp_servers\": {\"num\": {\"command\": [\"/usr/bin/python3\", "
                 "\"%s/bignum_mcp.py\"], \"approval\": \"always\"}}}",
                 TOOLS_DIR);
        write_file(path, text);
        codecell_cell *cell = new_cell(20000, 2000);
        CHECK(codecell_cell_load_tools(cell, path, &err) == 0);
        const char *code = rescued("num.big", L("x: 1", "x=1"));
        expect(cell, code,
               "{\"status\":\"ok\",\"value\":\"refused: approval needed: \\\"num.big\\\"");
        codecell_cell_set_approval(cell, approve, &cb);
        reset(CODECELL_APPROVAL_DECLINE, NULL, 0);
        expect(cell, code,
               "{\"status\":\"ok\",\"value\":\"refused: approval declined: the call of "
               "\\\"num.big\\\"");
        CHECK(cb.asked == 1 && strcmp(cb.tool, "num.big") == 0);
        reset(CODECELL_APPROVAL_ACCEPT, NULL, 0);
        expect(cell, code, "{\"status\":\"ok\",\"value\":{\"n\":1180591620717411303424,");
        CHECK(cb.asked == 1);
        codecell_cell_free(cell);
        unlink(path);
}

int main(int argc, char **argv)
{
        pick_language(argc, argv);
        codecell_error err = {0};
        char dir[] = "/tmp/codecell-approval-XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        char tools[600], marker[600];
        snprintf(tools, sizeof(tools), "%s/tools.json", dir);
        snprintf(marker, sizeof(marker), "%s/wrote", dir);
        /* The command tool's effect is a file on the host: present only when it ran. */
        char text[2048];
        snprintf(text, sizeof(text),
                 "{\"tools\": [{\"name\": \"write\", \"command\": [\"/bin/sh\", \"-c\", "
                 "\"cat > %s; echo true\"], \"approval\": \"always\", \"input_schema\": "
                 "{\"type\": \"object\", \"properties\": {\"text\": {\"type\": \"string\"}}}}]}",
                 marker);
        write_file(tools, text);
        refused_at_load(dir);

        codecell_cell *cell = new_cell(20000, 2000);
        if (!cell)
                return 1;
        CHECK(codecell_cell_add_tool(cell, "mail.send", "Sends a mail.", NULL, send_mail, NULL,
                                     &err) == 0);
        CHECK(codecell_cell_add_tool(cell, "mail.count", NULL, NULL, send_mail, NULL, &err) == 0);
        CHECK(codecell_cell_require_approval(cell, "mail.send", &err) == 0);
        CHECK(codecell_cell_load_tools(cell, tools, &err) == 0);
        CHECK(strstr(codecell_cell_description(cell), "Needs approval: each call waits"));

        /* No callback: refused with "approval needed", the tools never ran. */
        reset(CODECELL_APPROVAL_ACCEPT, NULL, 0);
        expect(cell, rescued("mail.send", ""),
               "{\"status\":\"ok\",\"value\":\"refused: approval needed: \\\"mail.send\\\" runs "
               "only when a person allows each call");
        expect(cell, rescued("write", L("text: 'hi'", "text='hi'")),
               "{\"status\":\"ok\",\"value\":\"refused: approval needed: \\\"write\\\"");
        CHECK(sends == 0 && !exists(marker));

        codecell_cell_set_approval(cell, approve, &cb);
        /* An unmarked tool is not asked about. */
        expect(cell, L("SB.call('mail.count')", "sb.call('mail.count')"),
               "{\"status\":\"ok\",\"value\":\"sent\"");
        CHECK(cb.asked == 0 && sends == 1);

        /* Accepted: the tool runs; the callback saw the call and the run's userdata. */
        reset(CODECELL_APPROVAL_ACCEPT, NULL, 0);
        expect(cell, rescued("write", L("text: 'hello'", "text='hello'")),
               "{\"status\":\"ok\",\"value\":true,");
        CHECK(cb.asked == 1 && strcmp(cb.tool, "write") == 0);
        CHECK(strstr(cb.args, "\"text\"") && strstr(cb.args, "\"hello\""));
        CHECK(cb.wait_ms == 2000 && cb.run_userdata == &cb);
        CHECK(exists(marker));
        unlink(marker);

        /* Declined, with the person's reason: the guest rescues it, nothing ran. */
        reset(CODECELL_APPROVAL_DECLINE, "not to the board", 0);
        expect(cell, rescued("mail.send", ""),
               "{\"status\":\"ok\",\"value\":\"refused: approval declined: the call of "
               "\\\"mail.send\\\" was not allowed: not to the board; it did not run\"");
        expect(cell, rescued("write", L("text: 'x'", "text='x'")),
               "{\"status\":\"ok\",\"value\":\"refused: approval declined:");
        CHECK(cb.asked == 2 && sends == 0 && !exists(marker));

        /* After one refusal the run is not asked again: a guest cannot flood the person, nor
         * keep its clock parked, by calling again and again. */
        reset(CODECELL_APPROVAL_DECLINE, NULL, 0);
        expect(cell,
               L("3.times.map { begin; SB.call('mail.send'); rescue SB::ToolError => e; "
                 "e.message; end }.last",
                 "def f():\n    try:\n        sb.call('mail.send')\n    except sb.ToolError as "
                 "e:\n        return str(e)\n[f() for _ in range(3)][-1]"),
               "{\"status\":\"ok\",\"value\":\"approval declined: an earlier call of this run "
               "was refused approval, so \\\"mail.send\\\" is not asked about again");
        CHECK(cb.asked == 1 && sends == 0);
        /* The next run is asked afresh. */
        reset(CODECELL_APPROVAL_ACCEPT, NULL, 0);
        expect(cell, L("SB.call('mail.send')", "sb.call('mail.send')"),
               "{\"status\":\"ok\",\"value\":\"sent\"");
        CHECK(cb.asked == 1 && sends == 1);

        /* Unrescued, the decline ends the run as an error of the tool's class. */
        reset(CODECELL_APPROVAL_DECLINE, NULL, 0);
        expect(cell, L("SB.call('mail.send')", "sb.call('mail.send')"),
               "{\"status\":\"error\",\"error\":{\"class\":\"");

        /* An error of the callback, and a reason that is not UTF-8, still refuse cleanly. */
        reset(-1, "\xff\xfe broken", 0);
        expect(cell, rescued("mail.send", ""),
               "{\"status\":\"ok\",\"value\":\"refused: approval needed: \\\"mail.send\\\" "
               "could not be approved: ");
        CHECK(sends == 0);

        /* Late: an accept after approval_ms counts as a timeout, and the tool never runs. */
        codecell_cell *quick = new_cell(20000, 300);
        CHECK(codecell_cell_load_tools(quick, tools, &err) == 0);
        codecell_cell_set_approval(quick, approve, &cb);
        reset(CODECELL_APPROVAL_ACCEPT, NULL, 700);
        expect(quick, rescued("write", L("text: 'late'", "text='late'")),
               "{\"status\":\"ok\",\"value\":\"refused: approval needed: nobody allowed "
               "\\\"write\\\" within 300 ms");
        CHECK(cb.asked == 1 && !exists(marker));
        codecell_cell_free(quick);

        /* The run's clock is parked while a person decides: two waits of 1.2 s each fit in a
         * run of 2 s, and the wall clock still counts outside them. */
        codecell_cell *parked = new_cell(2000, 5000);
        CHECK(codecell_cell_add_tool(parked, "mail.send", NULL, NULL, send_mail, NULL, &err) == 0);
        CHECK(codecell_cell_require_approval(parked, "mail.send", &err) == 0);
        codecell_cell_set_approval(parked, approve, &cb);
        reset(CODECELL_APPROVAL_ACCEPT, NULL, 1200);
        expect(parked,
               L("2.times.map { SB.call('mail.send') }",
                 "[sb.call('mail.send') for _ in range(2)]"),
               "{\"status\":\"ok\",\"value\":[\"sent\",\"sent\"],");
        CHECK(sends == 2);
        reset(CODECELL_APPROVAL_ACCEPT, NULL, 100);
        expect(parked, L("SB.call('mail.send'); loop {}", "sb.call('mail.send')\nwhile True: pass"),
               "{\"status\":\"timeout\",");
        codecell_cell_free(parked);

        codecell_cell_free(cell);
        upstream_marked(dir);
        unlink(tools);
        rmdir(dir);
        CHECK_DONE();
}
