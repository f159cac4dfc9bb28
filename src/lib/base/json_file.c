#include "json_file.h"

#include <errno.h>
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
