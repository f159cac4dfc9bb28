/* Line editing with libedit (BSD editline, Debian's libedit2): a well-kept library with a
 * BSD licence, emacs and vi keys, and ~/.editrc. While a line is edited, Ctrl-C is a key
 * (the terminal's ISIG is off then) bound to a function that drops the line; libedit
 * restores the terminal as it hands the line over, so a Ctrl-C while an entry runs is the
 * SIGINT that interrupts it (repl_interrupt.c). */
#include "repl_line.h"

#include <errno.h>
#include <histedit.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HISTORY_SIZE 1000

struct repl_line {
        EditLine *el; /* NULL: stdin is not a terminal */
        History *history;
        char *history_path;
        const char *prompt; /* what prompt_of shows */
        bool cleared;       /* Ctrl-C was pressed on the line being read */
};

static char *prompt_of(EditLine *el)
{
        struct repl_line *l = NULL;
        el_get(el, EL_CLIENTDATA, &l);
        return (char *)(l && l->prompt ? l->prompt : "");
}

/* Ctrl-C: end the line at once, to be dropped. libedit leaves the terminal's cursor where
 * the line's was: the text right of it is written again, so that the "^C" repl_line_read
 * writes goes after the whole line rather than over its end. */
static unsigned char clear_line(EditLine *el, int ch)
{
        (void)ch;
        struct repl_line *l = NULL;
        el_get(el, EL_CLIENTDATA, &l);
        if (l)
                l->cleared = true;
        const LineInfo *li = el_line(el);
        if (li && li->cursor < li->lastchar)
                fwrite(li->cursor, 1, (size_t)(li->lastchar - li->cursor), stdout);
        return CC_NEWLINE;
}

static void open_editor(struct repl_line *l)
{
        /* libedit reads and shows UTF-8 only in a locale that says so. */
        (void)setlocale(LC_CTYPE, "");
        l->el = el_init("codecell", stdin, stdout, stderr);
        l->history = history_init();
        if (!l->el || !l->history) {
                if (l->el)
                        el_end(l->el);
                if (l->history)
                        history_end(l->history);
                l->el = NULL;
                l->history = NULL;
                return;
        }
        HistEvent ev;
        (void)history(l->history, &ev, H_SETSIZE, HISTORY_SIZE);
        (void)history(l->history, &ev, H_SETUNIQUE, 1);
        if (l->history_path)
                (void)history(l->history, &ev, H_LOAD, l->history_path); /* none yet: fine */
        el_set(l->el, EL_CLIENTDATA, l);
        el_set(l->el, EL_EDITOR, "emacs");
        /* Resizes and a return from Ctrl-Z redraw the line. */
        el_set(l->el, EL_SIGNAL, 1);
        el_set(l->el, EL_PROMPT, prompt_of);
        el_set(l->el, EL_HIST, history, l->history);
        el_set(l->el, EL_SETTY, "-d", "-isig", NULL);
        /* Wide and static: libedit's narrow EL_ADDFN wcsdup()s both strings and never frees
         * them (its eln.c says so), which LeakSanitizer reports at every exit. */
        el_wset(l->el, EL_ADDFN, L"codecell-clear-line", L"drop the line", clear_line);
        el_set(l->el, EL_BIND, "^C", "codecell-clear-line", NULL);
        /* The user's own keys last: ~/.editrc (its "codecell:" lines too). */
        (void)el_source(l->el, NULL);
}

struct repl_line *repl_line_open(const char *history_path)
{
        struct repl_line *l = calloc(1, sizeof(*l));
        if (!l)
                return NULL;
        if (history_path && !(l->history_path = strdup(history_path))) {
                free(l);
                return NULL;
        }
        if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))
                open_editor(l);
        return l;
}

static void save_history(struct repl_line *l)
{
        HistEvent ev;
        if (l->history && l->history_path)
                (void)history(l->history, &ev, H_SAVE, l->history_path);
}

void repl_line_close(struct repl_line *l)
{
        if (!l)
                return;
        save_history(l);
        if (l->el)
                el_end(l->el);
        if (l->history)
                history_end(l->history);
        free(l->history_path);
        free(l);
}

bool repl_line_interactive(const struct repl_line *l)
{
        return l->el != NULL;
}

static enum repl_read read_plain(char **ret_line)
{
        char *line = NULL;
        size_t cap = 0;
        ssize_t n = getline(&line, &cap, stdin);
        if (n < 0) {
                free(line);
                return READ_END;
        }
        if (n > 0 && line[n - 1] == '\n')
                line[n - 1] = '\0';
        *ret_line = line;
        return READ_LINE;
}

enum repl_read repl_line_read(struct repl_line *l, const char *prompt, char **ret_line)
{
        *ret_line = NULL;
        if (!l->el)
                return read_plain(ret_line);
        l->prompt = prompt;
        l->cleared = false;
        int count = 0;
        const char *line = el_gets(l->el, &count);
        if (l->cleared) {
                /* The cursor is on the dropped line: the next prompt goes below. */
                fputs("^C\n", stdout);
                fflush(stdout);
                return READ_CLEARED;
        }
        if (!line || count <= 0) {
                fputs("\n", stdout); /* after the prompt Ctrl-D left the cursor on */
                return READ_END;
        }
        size_t n = (size_t)count;
        if (n > 0 && line[n - 1] == '\n')
                n--;
        *ret_line = strndup(line, n);
        return *ret_line ? READ_LINE : READ_END;
}

void repl_line_remember(struct repl_line *l, const char *line)
{
        if (!l->history || !*line)
                return;
        HistEvent ev;
        (void)history(l->history, &ev, H_ENTER, line);
        /* Written at once: a REPL killed, or its terminal closed, keeps what was typed. */
        save_history(l);
}

/* mkdir -p for the folders of a path under home, private to the user. */
static void make_folders(char *path)
{
        for (char *slash = strchr(path + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = '\0';
                if (mkdir(path, 0700) < 0 && errno != EEXIST) {
                        *slash = '/';
                        return;
                }
                *slash = '/';
        }
}

char *repl_history_path(const char *language)
{
        const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
        char *path = NULL;
        int r;
        if (state && *state == '/')
                r = asprintf(&path, "%s/codecell/repl_history_%s", state, language);
        else if (home && *home == '/')
                r = asprintf(&path, "%s/.local/state/codecell/repl_history_%s", home, language);
        else
                return NULL;
        if (r < 0)
                return NULL;
        make_folders(path);
        return path;
}
