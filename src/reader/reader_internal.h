/*
 * Private parts of the reader library shared by its files. Nothing here is
 * exported from the shared library.
 */
#ifndef ST_READER_INTERNAL_H
#define ST_READER_INTERNAL_H

#include <simpletrace/reader.h>

#include "glob_match.h"
#include "events.h"

/* The catalog: the parsed list plus the public views of its events. */
struct st_catalog {
    struct st_event_list list;    /* owns every string the views point to */
    struct st_event_info *events; /* count + 1 entries: the last is Dropped_Event */
    struct st_arg_info *args;     /* the args of every event, back to back */
    size_t count;                 /* declared events */
};

/*
 * An event-name filter compiled against a catalog: one byte per event index
 * (Dropped_Event included), 1 = selected. Returns a malloc'ed array (caller
 * frees) in *out, NULL when spec selects everything. 0, -EINVAL or -ENOMEM.
 */
int st__filter_compile(const struct st_catalog *cat, const char *spec, uint8_t **out);

/* Piece k of the rotated trace base (base itself for 0, else base.k), malloc'ed; NULL if out of memory. */
char *st__piece_name(const char *base, uint64_t k);

/* Whether a piece is there: anything but "no such file" counts, so opening it reports the real problem. */
bool st__piece_exists(const char *path);


#endif /* ST_READER_INTERNAL_H */
