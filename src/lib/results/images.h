/* Pictures a run hands back (figures its code drew, image files it wrote to the cell's image
 * folder): received from the guest as "image" frames, checked by their bytes, capped. */
#ifndef CODECELL_IMAGES_H
#define CODECELL_IMAGES_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

struct result_image {
        char *name; /* the file's name in the output folder; NULL: a figure the prelude drew */
        const char *mime_type; /* static: found from the bytes, never from the guest's word */
        unsigned char *data;
        size_t len;
};

struct image_list {
        struct result_image *items;
        size_t n;
        size_t max_count, max_bytes; /* caps of the run */
        size_t omitted;              /* over a cap, or not an image */
        char why_omitted[160];       /* the first reason */
};

void image_list_init(struct image_list *l, size_t max_count, size_t max_bytes);
void image_list_free(struct image_list *l);
/* "image/png", "image/jpeg", "image/gif" or "image/webp" when data starts like one, or NULL. */
const char *image_kind(const unsigned char *data, size_t len);
/* Takes an "image" frame's "data" (base64). An image over a cap, or whose bytes are not a
 * known picture, is counted in omitted. -ENOMEM; -EBADMSG when data is not base64 text. */
int image_list_take(struct image_list *l, const json_t *frame);
/* Adds a picture whose kind the caller found from bytes (which it hands over), counted in
 * omitted when over a cap. name: its file's name, or NULL. -ENOMEM. */
int image_list_add(struct image_list *l, const char *name, unsigned char *bytes, size_t len,
                   const char *kind);
/* The description's paragraph about pictures (nothing when the cell returns none): own, the
 * language's sentence on the images its prelude hands back by itself (NULL: none), and the
 * folder whose image files come back (NULL: none). */
void images_describe(FILE *f, const char *own, const char *folder, size_t max_count,
                     size_t max_bytes);
/* The description's paragraph about the output folder's other files (nothing without one). */
void files_describe(FILE *f, const char *folder, size_t max_count, size_t max_bytes);

#endif
