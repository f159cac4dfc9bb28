/* The unknown-key check of a configuration file's objects (json_file.h) and the list of known
 * keys its errors give. */
#include <jansson.h>

#include "check.h"
#include "json_file.h"

int main(void)
{
        static const char *const known[] = {"name", "command", "env", NULL};
        json_t *good = json_pack("{s:s, s:[s]}", "name", "a", "command", "/bin/true");
        json_t *bad = json_pack("{s:s, s:i, s:i}", "name", "a", "colour", 1, "size", 2);
        json_t *empty = json_object();
        CHECK(json_unknown_key(good, known) == NULL);
        CHECK(json_unknown_key(empty, known) == NULL);
        /* The first unknown one, in the object's order. */
        CHECK_STR(json_unknown_key(bad, known), "colour");
        static const char *const none[] = {NULL};
        CHECK_STR(json_unknown_key(good, none), "name");

        char list[64];
        CHECK_STR(json_key_list(known, list, sizeof(list)), "name, command, env");
        CHECK_STR(json_key_list(known + 2, list, sizeof(list)), "env");
        CHECK_STR(json_key_list(none, list, sizeof(list)), "");
        /* Cut to the buffer, never past it. */
        char small[8];
        CHECK_STR(json_key_list(known, small, sizeof(small)), "name, c");
        json_decref(good);
        json_decref(bad);
        json_decref(empty);
        CHECK_DONE();
}
