/* The ABI promise of docs/api.md, checked: the structs a caller allocates keep their size and
 * layout, the enum values keep their numbers, and codecell_cell_info_get writes zeros into the
 * room it keeps for later. A change that breaks one of these must bump the soname (and this
 * test), never slip in. The figures are those of LP64 (x86_64, arm64). */
#include <stddef.h>
#include <string.h>

#include "check.h"
#include "codecell.h"

static void layouts(void)
{
        CHECK(sizeof(codecell_error) == 520);
        CHECK(offsetof(codecell_error, message) == 8);
        CHECK(sizeof(codecell_layer_report) == 272);
        CHECK(offsetof(codecell_layer_report, detail) == 10);
        CHECK(sizeof(codecell_run_options) == 96);
        CHECK(offsetof(codecell_run_options, userdata) == 24);
        CHECK(offsetof(codecell_run_options, output) == 32);
        CHECK(offsetof(codecell_run_options, argv) == 40);
        CHECK(offsetof(codecell_run_options, stdin_len) == 64);
        CHECK(offsetof(codecell_run_options, timeout_ms) == 72);
        CHECK(offsetof(codecell_run_options, files) == 80);
        CHECK(offsetof(codecell_run_options, reserved) == 88);
        /* A field that took a reserved slot is as wide as the pointer it replaced on every ABI
         * (32-bit ones too), so the struct keeps its size there as well. */
        CHECK(sizeof(((codecell_run_options *)0)->timeout_ms) == sizeof(void *));
        CHECK(sizeof(codecell_cell_info) == 368);
        CHECK(offsetof(codecell_cell_info, limits) == 48);
        CHECK(offsetof(codecell_cell_info, tool_calls) == 304);
        CHECK(offsetof(codecell_cell_info, network) == 320);
        CHECK(offsetof(codecell_cell_info, reserved) == 328);
        CHECK(sizeof(codecell_cellset_caps) == 320);
        CHECK(offsetof(codecell_cellset_caps, raise_unsupported) == 256);
        CHECK(offsetof(codecell_cellset_caps, reserved) == 264);
}

static void numbers(void)
{
        CHECK(CODECELL_ERR_SYSTEM == 3);
        CHECK(CODECELL_POLICY_IGNORE == 2);
        CHECK(CODECELL_MOUNT_READ_ONLY_EXEC == 2);
        CHECK(CODECELL_STATUS_SANDBOX_ERROR == 5);
        CHECK(CODECELL_LIMIT_TIMEOUT_MS == 0);
        CHECK(CODECELL_LIMIT_MEMORY_BYTES == 2);
        CHECK(CODECELL_LIMIT_FRAME_BYTES == 10);
        CHECK(CODECELL_LIMIT_TOOL_CALL_MS == 14);
        CHECK(CODECELL_LIMIT_SESSION_IDLE_MS == 16);
        CHECK(CODECELL_LIMIT_IMAGE_BYTES == 19);
        CHECK(CODECELL_LIMIT_FILES_IN == 20);
        CHECK(CODECELL_LIMIT_FILES_IN_BYTES == 21);
        CHECK(CODECELL_LIMIT_TOOL_CONCURRENCY == 22);
        CHECK(CODECELL_LIMIT_FILES_OUT == 23);
        CHECK(CODECELL_LIMIT_FILE_OUT_BYTES == 24);
        CHECK(CODECELL_LIMIT_APPROVAL_MS == 25);
        CHECK(CODECELL_LIMIT__COUNT <= CODECELL_LIMIT_SLOTS);
        CHECK(CODECELL_CELLSET_NO_POOL == 1u);
}

/* A limit's name goes with its number: configuration files and the bindings (which learn the
 * names by counting up to the first NULL) rely on both. */
static void limit_names(void)
{
        CHECK_STR(codecell_limit_name(CODECELL_LIMIT_TIMEOUT_MS), "timeout_ms");
        CHECK_STR(codecell_limit_name(CODECELL_LIMIT_SESSION_IDLE_MS), "session_idle_ms");
        CHECK_STR(codecell_limit_name(CODECELL_LIMIT_IMAGE_BYTES), "image_bytes");
        CHECK(codecell_limit_name(CODECELL_LIMIT__COUNT) == NULL);
        CHECK(codecell_limit_name((codecell_limit)-1) == NULL);
        CHECK_STR(codecell_limit_name(CODECELL_LIMIT_APPROVAL_MS), "approval_ms");
        for (int i = 0; i < CODECELL_LIMIT__COUNT; i++) {
                const char *name = codecell_limit_name((codecell_limit)i);
                codecell_limit limit = CODECELL_LIMIT__COUNT;
                CHECK(name != NULL);
                CHECK(name && codecell_limit_parse(name, &limit) && limit == (codecell_limit)i);
        }
        codecell_limit limit = CODECELL_LIMIT_PIDS;
        CHECK(!codecell_limit_parse("speed", &limit));
        CHECK(!codecell_limit_parse("", &limit));
        CHECK(!codecell_limit_parse(NULL, &limit));
        CHECK(limit == CODECELL_LIMIT_PIDS);
}

static void version(void)
{
        char expected[32];
        snprintf(expected, sizeof(expected), "%d.%d.%d", CODECELL_VERSION_MAJOR,
                 CODECELL_VERSION_MINOR, CODECELL_VERSION_PATCH);
        CHECK_STR(CODECELL_VERSION, expected);
        CHECK_STR(codecell_version(), CODECELL_VERSION);
}

/* What a caller that does not zero its codecell_cell_info gets: the reserved room and the
 * limit slots past the last limit are zero all the same. */
static void info_room_is_zero(void)
{
        codecell_error err = {0};
        codecell_config *config = codecell_config_new("ruby", &err);
        CHECK(config != NULL);
        if (!config)
                return;
        CHECK(codecell_config_set_pool(config, 0, &err) == 0);
        codecell_cell *cell = codecell_cell_new(config, &err);
        codecell_config_free(config);
        if (!cell) {
                fprintf(stderr, "codecell_cell_new: %s\n", err.message);
                check_failures++;
                return;
        }
        codecell_cell_info info;
        memset(&info, 0xa5, sizeof(info));
        codecell_cell_info_get(cell, &info);
        CHECK(info.limits[CODECELL_LIMIT_TIMEOUT_MS] == 30000);
        for (size_t i = CODECELL_LIMIT__COUNT; i < CODECELL_LIMIT_SLOTS; i++)
                CHECK(info.limits[i] == 0);
        for (size_t i = 0; i < sizeof(info.reserved) / sizeof(info.reserved[0]); i++)
                CHECK(info.reserved[i] == 0);
        codecell_cell_free(cell);
}

int main(void)
{
        layouts();
        numbers();
        limit_names();
        version();
        info_room_is_zero();
        CHECK_DONE();
}
