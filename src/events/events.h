/*
 * trace-events files: QEMU's grammar, parsed into an intermediate form that
 * the generator's emitters and the reader both use. Depends on the format
 * module only (for its limits).
 *
 *   file  := line*                  every line ends in '\n'
 *   line  := blank | '#' comment | event
 *   event := [props] name '(' args ')' [format]
 *   props := words; only "disable" is known
 *   args  := "void" | arg (',' arg)*        at most 10
 *   arg   := type name                      split at the last '*', else last blank
 *   format:= C string literals and PRI* macros, from the first '"' to the end of line
 *
 * A format's conversions must match the arguments as GCC's -Wformat
 * matches them (conversions.c): one per argument, of a fitting kind and
 * size, never %n. The generator holds every file to that (the C it makes
 * must compile warning-free); readers parse leniently (ST_EVENTS_LENIENT):
 * QEMU's tracetool does not check formats, so simpletrace.py reads files
 * whose formats do not fit (`disable ev(int x) "compiled out"`), and so
 * must we. Such an event is kept, marked, with a warning.
 */
#ifndef ST_EVENTS_H
#define ST_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

/* How an argument is stored in a trace record. */
enum st__arg_kind {
    ST_ARG_INTEGER, /* u64: integer types (sign-extended when signed), bool */
    ST_ARG_POINTER, /* u64: any pointer that is not a string */
    ST_ARG_STRING,  /* u32 length + bytes: const char * / char * (exactly one '*') */
};

/*
 * What an argument's value means: its kind, with bool and char told apart
 * among the integers. Decided here, once, from the type's words, so that
 * `const bool` and `bool const` are bools wherever they are read. `_Bool`
 * is not a type word tracetool allows, so the parser refuses it.
 */
enum st__arg_enc {
    ST__ENC_INTEGER, /* a number (size and is_signed say which) */
    ST__ENC_BOOL,    /* bool, const or not: 0 false, anything else true */
    ST__ENC_CHAR,    /* char, signed char, unsigned char, const or not: a number that is a character */
    ST__ENC_POINTER, /* an address */
    ST__ENC_STRING,  /* bytes: const char * / char * */
};

/* One declared argument. */
struct st__arg {
    char *type;            /* as declared, whitespace normalised: "const char *" */
    char *name;            /* C identifier */
    enum st__arg_kind kind; /* how it is recorded */
    enum st__arg_enc enc;  /* what the value means (refines kind) */
    bool names_bool;       /* the type has the word bool ("bool *" too): C needs <stdbool.h> for it */
    bool is_signed;        /* integer type that is signed (int, int64_t, ssize_t, ...) */
    unsigned size;         /* integer size in bytes as on LP64 (bool 1, long 8); 8 for pointers */
    char conv;             /* printf conversion letter that prints it ('*': a width or precision); 0 without a format */
};

/* One declared event. */
struct st__event_decl {
    char *name;         /* C identifier */
    bool disabled;      /* carries the `disable` property */
    unsigned nargs;     /* number of arguments (0 for void) */
    struct st__arg args[ST_MAX_ARGS];
    char *fmt;          /* the format text as written, from the first '"', trailing blanks cut; NULL if absent */
    const char *file;   /* file it came from (points into st__event_list's storage) */
    unsigned line;      /* 1-based line number */
    unsigned index;     /* position across all parsed files (IDs of --no-header files) */
    bool fmt_unfit;     /* lenient parse: the format does not fit the arguments (never used to print;
                           every conv 0); a strict parse refuses such an event instead */
    char *fmt_warning;  /* with fmt_unfit: "FILE:LINE: warning: ..." (one line, owned), else NULL */
};

/* Events parsed from one or more files, in file order. Owns all its strings. */
struct st__event_list {
    struct st__event_decl *events;
    size_t count;
    size_t capacity;
    char **files;        /* names of the parsed files, owned */
    size_t nfiles;
    void *index;         /* name hash built by st__events_build_index(), owned */
};

/* A parse error: where and what. */
struct st__events_error {
    char file[1024];
    unsigned line;       /* 0 when the error is about the whole file */
    bool subject;        /* the message goes on from the file name ("F is a trace file ...") */
    char message[512];
};

/* Initialises an empty list. */
void st__events_init(struct st__event_list *list);

/* Frees everything the list owns and leaves it empty. */
void st__events_free(struct st__event_list *list);

/*
 * Parses one trace-events file and appends its events to list. Returns 0, or
 * -EINVAL (syntax, or a format that does not fit the arguments; err says FILE:LINE: message) or -errno (I/O). On error
 * the list is unchanged.
 */
int st__events_parse_file(struct st__event_list *list, const char *path, struct st__events_error *err);

/* Same as st__events_parse_file() for text already in memory; name is used in messages. */
int st__events_parse_buffer(struct st__event_list *list, const char *name, const char *text, size_t len,
                           struct st__events_error *err);

/* How st__events_parse_buffer_flags() parses. */
enum st__events_parse_flags {
    ST_EVENTS_LENIENT = 1u << 0, /* a format that does not fit its arguments is kept and marked
                                    (fmt_unfit, fmt_warning) instead of being an error: for readers */
};

/* Same as st__events_parse_buffer() with flags (enum st__events_parse_flags; 0 is strict). */
int st__events_parse_buffer_flags(struct st__event_list *list, const char *name, const char *text, size_t len,
                                 unsigned flags, struct st__events_error *err);

/*
 * Checks the whole list: duplicate event names (across files) are an error
 * naming both places. Returns 0 or -EINVAL with err filled.
 */
int st__events_check(const struct st__event_list *list, struct st__events_error *err);

/* Builds the name index st__events_find() uses; call after the last parse. 0 or -ENOMEM. */
int st__events_build_index(struct st__event_list *list);

/*
 * Parses one declaration (text[0..len), no newline needed; file and line
 * for messages; leniently, as ST_EVENTS_LENIENT) and appends it with the name index kept current, so that
 * st__events_find() stays hashed while a list grows one event at a time (a
 * trace's declarations as a reader meets them). The caller checks the name
 * is new. 0, -EINVAL (err: FILE:LINE: what; also a blank or comment line)
 * or -ENOMEM; on error the list is unchanged.
 */
int st__events_add_line(struct st__event_list *list, const char *file, unsigned line, const char *text, size_t len,
                       struct st__events_error *err);

/* Removes the list's last event (a caller that could not use it); its file name stays. */
void st__events_pop(struct st__event_list *list);

/* Finds an event by name (name_len bytes, no NUL needed); NULL if absent. Hashed once indexed. */
const struct st__event_decl *st__events_find(const struct st__event_list *list, const char *name, size_t name_len);

/* Formats err as "FILE:LINE: message" (or "FILE: message") into buf. */
void st__events_error_format(const struct st__events_error *err, char *buf, size_t len);

#endif /* ST_EVENTS_H */
