/* The lines `codecell repl` reads: at a terminal through libedit (emacs keys, arrows, a
 * history kept in a file, Ctrl-C clearing the line), from anything else with getline, exactly
 * as they come. */
#ifndef CODECELL_CLI_REPL_LINE_H
#define CODECELL_CLI_REPL_LINE_H

#include <stdbool.h>

struct repl_line;

/* Reads stdin; edits lines when it is a terminal, with the history of history_path (NULL:
 * none kept), which is read now and written by repl_line_close. NULL when out of memory. */
struct repl_line *repl_line_open(const char *history_path);
/* Saves the history and frees. Accepts NULL. */
void repl_line_close(struct repl_line *l);
/* Whether lines are edited at a terminal (and prompts shown). */
bool repl_line_interactive(const struct repl_line *l);

enum repl_read {
        READ_LINE,    /* *ret_line: a malloc'd line, without its newline */
        READ_END,     /* end of input (Ctrl-D on an empty line) */
        READ_CLEARED, /* Ctrl-C: the line, and whatever the entry had so far, is dropped */
};
/* One line, after prompt at a terminal. */
enum repl_read repl_line_read(struct repl_line *l, const char *prompt, char **ret_line);
/* Puts a line typed at the terminal into the history (empty lines and repeats are not). */
void repl_line_remember(struct repl_line *l, const char *line);

/* $XDG_STATE_HOME/codecell/repl_history_LANG, or ~/.local/state/…, its folders made (0700);
 * malloc'd, or NULL when there is no home to keep it in. */
char *repl_history_path(const char *language);

#endif
