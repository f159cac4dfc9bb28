/* The table of guest languages (runtime.c): every entry fills every field the engine reads of
 * it, since no other file asks which language it has; and the lookups by name and extension,
 * and the interactive prompt's blocks, answer from it. */
#include <stdbool.h>
#include <string.h>

#include "check.h"
#include "codecell.h"
#include "runtime.h"

static bool starts_with(const char *s, const char *prefix)
{
        return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* printf formats with exactly one %s: the description fills them with one string. */
static bool one_string_format(const char *format)
{
        const char *at = format ? strchr(format, '%') : NULL;
        return at && at[1] == 's' && !strchr(at + 2, '%');
}

static void every_entry_is_whole(void)
{
        size_t n = 0;
        const struct runtime *rt;
        for (; (rt = runtime_at(n)); n++) {
                const struct tool_syntax *t = &rt->tools;
                CHECK(rt->name && *rt->name);
                CHECK(starts_with(rt->extension, ".") && rt->extension[1]);
                CHECK(starts_with(rt->interpreter, "/"));
                CHECK(rt->argv0 && rt->flags && rt->program_flag);
                CHECK(rt->boot && *rt->boot && rt->probe && *rt->probe);
                CHECK(starts_with(rt->prelude_path, "/codecell/") && rt->prelude && *rt->prelude);
                CHECK(!rt->compiled ||
                      (starts_with(rt->compiled_path, "/codecell/") && rt->compiled_size));
                CHECK(rt->package_hint && rt->out_of_memory_class);
                CHECK(one_string_format(rt->how_to_use) && rt->how_results);
                CHECK(rt->libraries_verb && rt->more_libraries);
                CHECK(!rt->own_images || *rt->own_images);
                CHECK(!rt->block_opener || *rt->block_opener);
                CHECK(t->intro && one_string_format(t->call) && one_string_format(t->keyword));
                CHECK(t->string && t->integer && t->number && t->boolean && t->array && t->object &&
                      t->null && t->any);
                CHECK(t->true_literal && t->false_literal && t->list_open && t->list_close);
                CHECK(t->optional && t->bindings_intro && t->describe);

                CHECK(runtime_find(rt->name) == rt);
                char file[64];
                snprintf(file, sizeof(file), "/work/x%s", rt->extension);
                CHECK(runtime_for_file(file) == rt);
                CHECK_STR(codecell_language_of(file), rt->name);
                for (size_t k = 0; k < n; k++) {
                        CHECK(strcmp(runtime_at(k)->name, rt->name) != 0);
                        CHECK(strcmp(runtime_at(k)->extension, rt->extension) != 0);
                }
        }
        CHECK(n >= 2);
        CHECK(runtime_find("cobol") == NULL && runtime_find(NULL) == NULL);
        CHECK(runtime_for_file("x.cob") == NULL && runtime_for_file("x.rb/y") == NULL);

        char names[256];
        runtime_names(names, sizeof(names));
        for (size_t i = 0; (rt = runtime_at(i)); i++)
                CHECK(strstr(names, rt->name) && (i == 0 || strstr(names, ", ")));
}

static void prompt_blocks(void)
{
        CHECK(codecell_language_opens_block("python", "for x in range(3):"));
        CHECK(codecell_language_opens_block("python", ":"));
        CHECK(!codecell_language_opens_block("python", "x = {'a': 1}"));
        CHECK(!codecell_language_opens_block("python", ""));
        CHECK(!codecell_language_opens_block("python", NULL));
        CHECK(!codecell_language_opens_block("ruby", "puts :a if x ? y :"));
        CHECK(!codecell_language_opens_block("cobol", "x:"));
        CHECK(!codecell_language_opens_block(NULL, "x:"));
}

int main(void)
{
        every_entry_is_whole();
        prompt_blocks();
        CHECK_DONE();
}
