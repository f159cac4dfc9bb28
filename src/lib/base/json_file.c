#include "json_file.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

json_t *json_file_load(const char *path, codecell_error *err)
{
        /* jansson words a missing file as "PATH:-1: unable to open PATH: …": open it here, so
         * that the message says what is wrong with the path. */
        FILE *f = fopen(path, "re");
        if (!f) {
                int e = errno;
                err_set(err, CODECELL_ERR_INVALID, e, "%s: cannot open: %s", path, strerror(e));
                return NULL;
        }
        json_error_t jerr;
        json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
        fclose(f);
        if (!root)
                err_set(err, CODECELL_ERR_INVALID, EINVAL, "%s:%d: %s", path, jerr.line, jerr.text);
        return root;
}

const char *json_unknown_key(const json_t *obj, const char *const *known)
{
        const char *key;
        const json_t *value;
        json_object_foreach((json_t *)obj, key, value) {
                size_t k = 0;
                while (known[k] && strcmp(key, known[k]) != 0)
                        k++;
                if (!known[k])
                        return key;
        }
        return NULL;
}

const char *json_key_list(const char *const *keys, char *buf, size_t size)
{
        if (size == 0)
                return buf;
        buf[0] = '\0';
        for (size_t k = 0; keys[k]; k++) {
                size_t len = strlen(buf);
                snprintf(buf + len, size - len, "%s%s", k ? ", " : "", keys[k]);
        }
        return buf;
}

/* The key as a person would say it: letters and digits, lower case, without '_' and '-'
 * (inputSchema and input_schema are the same word). */
static void spoken(const char *key, char *out, size_t size)
{
        size_t n = 0;
        for (const char *p = key; *p && n + 1 < size; p++)
                if (*p != '_' && *p != '-')
                        out[n++] = (char)tolower((unsigned char)*p);
        out[n] = '\0';
}

/* Edits from a to b (insert, delete, substitute, swap two neighbours), or more than max. */
static size_t edits(const char *a, const char *b, size_t max)
{
        size_t la = strlen(a), lb = strlen(b);
        if (la > 63 || lb > 63 || (la > lb ? la - lb : lb - la) > max)
                return max + 1;
        size_t d[64][64];
        for (size_t i = 0; i <= la; i++)
                d[i][0] = i;
        for (size_t j = 0; j <= lb; j++)
                d[0][j] = j;
        for (size_t i = 1; i <= la; i++)
                for (size_t j = 1; j <= lb; j++) {
                        size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
                        if (d[i - 1][j] + 1 < best)
                                best = d[i - 1][j] + 1;
                        if (d[i][j - 1] + 1 < best)
                                best = d[i][j - 1] + 1;
                        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                            d[i - 2][j - 2] + 1 < best)
                                best = d[i - 2][j - 2] + 1;
                        d[i][j] = best;
                }
        return d[la][lb];
}

const char *json_closest_key(const char *key, const char *const *known)
{
        char said[64], candidate[64];
        spoken(key, said, sizeof(said));
        /* Short words are close to everything: two edits only from six letters on. */
        size_t max = strlen(said) >= 6 ? 2 : 1, best = max + 1;
        const char *guess = NULL;
        bool tie = false;
        for (size_t k = 0; known[k]; k++) {
                spoken(known[k], candidate, sizeof(candidate));
                size_t e = edits(said, candidate, max);
                if (e < best) {
                        best = e;
                        guess = known[k];
                        tie = false;
                } else if (e == best) {
                        tie = true;
                }
        }
        return tie ? NULL : guess;
}

const char *json_unknown_key_problem(const char *what, const char *key, const char *const *known,
                                     char *buf, size_t size)
{
        char list[384];
        const char *guess = json_closest_key(key, known);
        if (guess)
                snprintf(buf, size, "unknown %s (did you mean \"%s\"? known: %s)", what, guess,
                         json_key_list(known, list, sizeof(list)));
        else
                snprintf(buf, size, "unknown %s (known: %s)", what,
                         json_key_list(known, list, sizeof(list)));
        return buf;
}
