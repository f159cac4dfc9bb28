/* Whether an entry is whole, by the language's brackets, strings and blocks. Ruby counts its
 * keywords that take an `end` (def, class, module, begin, case, do, for, and if, unless,
 * while, until where they start a statement rather than modify one) with the brackets;
 * strings, heredocs, percent literals, regexps, symbols and method names are stepped over so
 * that an `end` or a `{` in them counts for nothing. Python counts brackets and strings, and a
 * first line that ends in ':' (or a decorator) opens a block only an empty line closes, as in
 * Python's own REPL. */
#include "repl_entry.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

/* What came before, for the words and characters whose meaning depends on it: `if` after a
 * value modifies it (`x if y`), `/` after a value divides. */
enum prev { PREV_START, PREV_OP, PREV_VALUE };

struct scan {
        const char *p;
        int depth;        /* open brackets and keyword blocks */
        enum prev prev;   /* of the last token */
        bool loop;        /* a while, until or for whose optional `do` may follow */
        bool trailing;    /* the last token is an operator that wants an operand */
        bool open;        /* a string, heredoc, literal or comment is open at the end */
        int heredocs;     /* pending on this line, bodies from the next */
        char ends[4][64]; /* their terminators */
        bool indented[4]; /* <<~ or <<-: the terminator may be indented */
};

static bool word_char(char c)
{
        return isalnum((unsigned char)c) || c == '_' || (unsigned char)c >= 0x80;
}

/* From an opening quote (or delimiter) to past its closing one; in Ruby's double-quoted
 * strings through #{…} interpolations, whose code may hold quotes of its own. false when the
 * entry ends first. */
static bool skip_quoted(struct scan *s, char open, char close, bool interpolates)
{
        int nest = 0;
        for (s->p++; *s->p; s->p++) {
                char c = *s->p;
                if (c == '\\' && s->p[1]) {
                        s->p++;
                } else if (interpolates && c == '#' && s->p[1] == '{') {
                        int braces = 0;
                        for (s->p++; *s->p; s->p++) {
                                if (*s->p == '{')
                                        braces++;
                                else if (*s->p == '}' && --braces == 0)
                                        break;
                                else if (*s->p == '"' || *s->p == '\'') {
                                        if (!skip_quoted(s, *s->p, *s->p, *s->p == '"'))
                                                return false;
                                        s->p--; /* at its closing quote, as the loop wants */
                                }
                        }
                        if (!*s->p)
                                return false;
                } else if (c == open && open != close) {
                        nest++;
                } else if (c == close) {
                        if (nest-- == 0) {
                                s->p++;
                                return true;
                        }
                }
        }
        return false;
}

static char closer(char open)
{
        switch (open) {
        case '(':
                return ')';
        case '[':
                return ']';
        case '{':
                return '}';
        case '<':
                return '>';
        default:
                return open;
        }
}

/* ---- Ruby ---------------------------------------------------------------------------- */

/* At the start of a line: the bodies of the heredocs the last line opened, through their
 * terminators, and a =begin … =end comment. false when the entry ends inside one. */
static bool rb_line_start(struct scan *s)
{
        for (int h = 0; h < s->heredocs; h++) {
                for (;;) {
                        if (!*s->p)
                                return false;
                        const char *line = s->p, *eol = strchr(line, '\n');
                        size_t len = eol ? (size_t)(eol - line) : strlen(line);
                        s->p = eol ? eol + 1 : line + len;
                        while (s->indented[h] && len > 0 && (*line == ' ' || *line == '\t')) {
                                line++;
                                len--;
                        }
                        if (len == strlen(s->ends[h]) && strncmp(line, s->ends[h], len) == 0)
                                break;
                }
        }
        s->heredocs = 0;
        if (strncmp(s->p, "=begin", 6) == 0 && !word_char(s->p[6])) {
                for (;;) {
                        const char *eol = strchr(s->p, '\n');
                        if (!eol)
                                return false;
                        s->p = eol + 1;
                        if (strncmp(s->p, "=end", 4) == 0 && !word_char(s->p[4]))
                                break;
                }
        }
        return true;
}

/* `<<~ID`, `<<-ID`, `<<ID`, `<<~'ID'`: a heredoc whose body starts on the next line. At "<<";
 * false when it is the shift operator. */
static bool rb_heredoc(struct scan *s)
{
        const char *q = s->p + 2;
        bool indented = *q == '~' || *q == '-';
        if (indented)
                q++;
        else if (s->prev == PREV_VALUE && s->p[-1] != ' ')
                return false; /* x<<Y */
        char quote = *q == '\'' || *q == '"' || *q == '`' ? *q++ : 0;
        if (!quote && !(isupper((unsigned char)*q) || *q == '_' || (indented && word_char(*q))))
                return false;
        const char *start = q;
        while (quote ? *q && *q != quote && *q != '\n' : word_char(*q))
                q++;
        size_t len = (size_t)(q - start);
        if (len == 0 || len >= sizeof(s->ends[0]) || (quote && *q != quote))
                return false;
        if (s->heredocs < 4) {
                memcpy(s->ends[s->heredocs], start, len);
                s->ends[s->heredocs][len] = '\0';
                s->indented[s->heredocs++] = indented;
        }
        s->p = quote ? q + 1 : q;
        return true;
}

/* After `def`: its name (self.name, name?, name=, an operator) and parameters, and whether
 * an `=` follows, which makes it an endless method (`def twice(x) = x * 2`) with no `end`. */
static bool rb_endless_def(struct scan *s)
{
        const char *q = s->p;
        while (*q == ' ' || *q == '\t')
                q++;
        if (word_char(*q)) {
                while (word_char(*q) || *q == '.')
                        q++;
                if (*q == '?' || *q == '!' || (*q == '=' && q[1] == '('))
                        q++;
        } else {
                while (*q && strchr("+-*/%<=>!~[]^&|`", *q) && *q != '(')
                        q++;
        }
        s->p = q;
        while (*q == ' ' || *q == '\t')
                q++;
        if (*q == '(') {
                int nest = 0;
                for (; *q; q++) {
                        if (*q == '(')
                                nest++;
                        else if (*q == ')' && --nest == 0)
                                break;
                }
                if (!*q)
                        return false;
                q++;
                while (*q == ' ' || *q == '\t')
                        q++;
        }
        return *q == '=' && !strchr("=~>", q[1]);
}

/* A word: a keyword changes the depth, anything else is a value. */
static void rb_word(struct scan *s, const char *w, size_t n)
{
#define IS(k) (n == sizeof(k) - 1 && memcmp(w, k, n) == 0)
        bool starts = s->prev != PREV_VALUE;
        if (IS("def")) {
                if (!rb_endless_def(s))
                        s->depth++;
                s->prev = PREV_VALUE;
                return;
        }
        if (IS("class") || IS("module") || IS("begin") || IS("case")) {
                s->depth++;
        } else if (IS("for")) {
                s->depth++;
                s->loop = true;
        } else if (IS("if") || IS("unless")) {
                s->depth += starts;
        } else if (IS("while") || IS("until")) {
                s->depth += starts;
                s->loop = starts;
        } else if (IS("do")) {
                if (s->loop)
                        s->loop = false;
                else
                        s->depth++;
        } else if (IS("end")) {
                s->depth--;
                s->prev = PREV_VALUE;
                return;
        } else if (!(IS("then") || IS("else") || IS("elsif") || IS("and") || IS("or") ||
                     IS("not") || IS("in") || IS("when") || IS("rescue") || IS("ensure"))) {
                s->prev = PREV_VALUE;
                return;
        }
        s->prev = PREV_START;
#undef IS
}

static void rb_skip_word(struct scan *s)
{
        while (word_char(*s->p))
                s->p++;
        if (*s->p == '?' || *s->p == '!')
                s->p++;
}

/* One token at s->p; false when the entry ends inside a string or literal. */
static bool rb_token(struct scan *s)
{
        const char *p = s->p;
        char c = *p;
        s->trailing = false;
        if (c == '#') {
                while (*s->p && *s->p != '\n')
                        s->p++;
                return true;
        }
        if (c == '\'' || c == '"' || c == '`') {
                s->prev = PREV_VALUE;
                return skip_quoted(s, c, c, c != '\'');
        }
        if (c == '@' || c == '$' || isdigit((unsigned char)c)) {
                s->p++;
                rb_skip_word(s);
                s->prev = PREV_VALUE;
                return true;
        }
        if (word_char(c)) {
                rb_skip_word(s);
                /* `if: 1` is a hash key, not a keyword. */
                if (*s->p == ':' && s->p[1] != ':') {
                        s->prev = PREV_VALUE;
                        return true;
                }
                rb_word(s, p, (size_t)(s->p - p));
                return true;
        }
        s->p++;
        if ((c == '.' || (c == ':' && *s->p != ':' && s->prev != PREV_VALUE)) && word_char(*s->p)) {
                /* A method name (x.class, x.end) or a symbol (:end): never a keyword. */
                rb_skip_word(s);
                s->prev = PREV_VALUE;
                return true;
        }
        if (c == ':' && (*s->p == '"' || *s->p == '\'')) {
                s->prev = PREV_VALUE;
                return skip_quoted(s, *s->p, *s->p, *s->p == '"');
        }
        if (c == '(' || c == '[' || c == '{') {
                s->depth++;
                s->prev = PREV_OP;
                return true;
        }
        if (c == ')' || c == ']' || c == '}') {
                s->depth--;
                s->prev = PREV_VALUE;
                return true;
        }
        if (c == '<' && *s->p == '<') {
                s->p--;
                if (rb_heredoc(s)) {
                        s->prev = PREV_VALUE;
                        return true;
                }
                s->p += 2;
        }
        if (s->prev != PREV_VALUE) {
                if (c == '/') {
                        s->p--;
                        s->prev = PREV_VALUE;
                        return skip_quoted(s, '/', '/', true);
                }
                if (c == '%') {
                        const char *q = s->p;
                        if (*q && strchr("qQwWiIrsx", *q) && q[1] && strchr("([{<|!/^", q[1]))
                                q++;
                        if (*q && strchr("([{<|!/^", *q)) {
                                s->p = q;
                                s->prev = PREV_VALUE;
                                return skip_quoted(s, *q, closer(*q), true);
                        }
                }
                if (c == '?' && *s->p && !isspace((unsigned char)*s->p) && !word_char(s->p[1])) {
                        s->p++; /* ?a, ?( : a character */
                        s->prev = PREV_VALUE;
                        return true;
                }
        }
        if (c == '\n' || c == ';') {
                s->prev = PREV_START;
                s->loop = false;
                return c == ';' || rb_line_start(s);
        }
        if (!isspace((unsigned char)c)) {
                s->prev = PREV_OP;
                s->trailing = strchr(",.=+-*/&|\\", c) != NULL;
        }
        return true;
}

static enum repl_entry ruby_state(const char *entry)
{
        struct scan s = {.p = entry, .prev = PREV_START};
        if (!rb_line_start(&s))
                return ENTRY_OPEN;
        while (*s.p) {
                bool was_trailing = s.trailing;
                if (!rb_token(&s))
                        return ENTRY_OPEN;
                /* A line break keeps an operator at the end of the line wanting its operand. */
                if (isspace((unsigned char)s.p[-1]))
                        s.trailing = was_trailing || s.trailing;
        }
        if (s.heredocs > 0)
                return ENTRY_OPEN;
        return s.depth > 0 || s.trailing ? ENTRY_OPEN : ENTRY_WHOLE;
}

/* ---- Python -------------------------------------------------------------------------- */

static enum repl_entry python_state(const char *entry)
{
        struct scan s = {.p = entry};
        bool first_line = true, block = false;
        const char *line = entry;
        char last = 0; /* the last character of the logical line outside strings and comments */
        while (*s.p) {
                char c = *s.p;
                if (c == '#') {
                        while (*s.p && *s.p != '\n')
                                s.p++;
                        continue;
                }
                if (c == '\'' || c == '"') {
                        if (s.p[1] == c && s.p[2] == c) {
                                const char *end = s.p + 3;
                                for (;; end++) {
                                        if (!*end)
                                                return ENTRY_OPEN;
                                        if (*end == '\\' && end[1])
                                                end++;
                                        else if (strncmp(end, c == '"' ? "\"\"\"" : "'''", 3) == 0)
                                                break;
                                }
                                s.p = end + 3;
                        } else if (!skip_quoted(&s, c, c, false)) {
                                return ENTRY_OPEN;
                        }
                        last = c;
                        continue;
                }
                s.p++;
                if (c == '(' || c == '[' || c == '{')
                        s.depth++;
                else if (c == ')' || c == ']' || c == '}')
                        s.depth--;
                if (c == '\n' && s.depth <= 0) {
                        const char *q = line;
                        while (*q == ' ' || *q == '\t')
                                q++;
                        if (first_line && (last == ':' || *q == '@'))
                                block = true;
                        first_line = false;
                        line = s.p;
                        last = 0;
                } else if (!isspace((unsigned char)c)) {
                        last = c;
                }
        }
        if (s.depth > 0)
                return ENTRY_OPEN;
        return block ? ENTRY_BLOCK : ENTRY_WHOLE;
}

enum repl_entry repl_entry_state(const char *language, const char *entry)
{
        if (strcmp(language, "ruby") == 0)
                return ruby_state(entry);
        if (strcmp(language, "python") == 0)
                return python_state(entry);
        return ENTRY_WHOLE;
}
