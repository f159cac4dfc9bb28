/* Checking a tool's arguments against its JSON Schema (json_schema_check.c). */
#ifndef CODECELL_JSON_SCHEMA_CHECK_H
#define CODECELL_JSON_SCHEMA_CHECK_H

#include <jansson.h>
#include <stddef.h>

/* NULL when value satisfies schema, else buf holding the JSON path of the first bad part and
 * what is wrong: "entities[0].name: must be string". */
const char *json_schema_check(const json_t *schema, const json_t *value, char *buf, size_t size);

#endif
