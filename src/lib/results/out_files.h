/* Files a run hands back from its output folder: received from the guest as "file" frames,
 * named and typed by the host (the name checked, the MIME type found from the bytes), capped.
 * A file whose bytes are a picture joins the run's images instead. */
#ifndef CODECELL_OUT_FILES_H
#define CODECELL_OUT_FILES_H

#include <jansson.h>
#include <stddef.h>

#include "images.h"

struct result_file {
        char *name;            /* a plain name in the folder: UTF-8, no '/', no control bytes */
        const char *mime_type; /* static: from the bytes (and, for UTF-8 text, the suffix) */
        unsigned char *data;
        size_t len;
};

/* What was left out, by name, so that the model knows which file and why. */
struct file_omission {
        char *name;
        const char *reason; /* static */
};

#define FILE_OMISSIONS_NAMED 16 /* omissions listed by name; more are only counted */

struct file_list {
        struct result_file *items;
        size_t n;
        size_t max_count, max_bytes; /* caps of the run */
        struct file_omission omissions[FILE_OMISSIONS_NAMED];
        size_t n_omissions; /* named, at most FILE_OMISSIONS_NAMED */
        size_t omitted;     /* all of them */
        char too_big[64];   /* the reasons for a file over max_bytes, over max_count */
        char too_many[64];
};

void file_list_init(struct file_list *l, size_t max_count, size_t max_bytes);
void file_list_free(struct file_list *l);
/* The MIME type of a file's bytes: a known binary format by its magic number, else UTF-8 text
 * typed by the name's suffix (.csv, .json; else text/plain), else application/octet-stream. */
const char *file_kind(const char *name, const unsigned char *data, size_t len);
/* Takes a "file" frame ({name, data} with data in base64; {name, size} for one the prelude
 * kept back over the cap; {name, kind} for one it would not open). A picture goes to images
 * (and its caps); anything refused is counted with its reason. -ENOMEM; -EBADMSG when the
 * frame is malformed (no name, data that is not base64). */
int file_list_take(struct file_list *l, struct image_list *images, const json_t *frame);

#endif
