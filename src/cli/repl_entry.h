/* When an entry of `codecell repl` is whole: the lines typed so far, read as the language
 * reads them, still open a block, a bracket or a string, or they are ready to run. A
 * prompt's judgement only, from the characters (no parser): what it cannot tell it calls
 * whole, and the interpreter's syntax error says the rest. */
#ifndef CODECELL_CLI_REPL_ENTRY_H
#define CODECELL_CLI_REPL_ENTRY_H

enum repl_entry {
        ENTRY_WHOLE, /* ready to run */
        ENTRY_OPEN,  /* a block, bracket, string or heredoc is open: read on */
        ENTRY_BLOCK, /* a Python compound statement: read on until an empty line */
};

/* entry: the lines so far, each ending in '\n'. An unknown language is always whole. */
enum repl_entry repl_entry_state(const char *language, const char *entry);

#endif
