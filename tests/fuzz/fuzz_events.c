/*
 * libFuzzer target for the trace-events parser: any bytes must parse or be
 * rejected with a message, never crash, hang or leak. Also exercises the
 * duplicate check, the name index and the error formatter on what parsed,
 * and the printf scan of each format that parsed (what the reader's log
 * format walks): it ends, and takes no more arguments than were checked.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "events.h"
#include "printf_scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Counts the arguments the conversions of ev's format take; traps beyond nargs. */
static void scan_format(const struct st__event_decl *ev)
{
    struct st__printf_cursor c;
    struct st__printf_spec s;
    unsigned taken = 0;
    st__printf_scan_init(&c, ev->fmt);
    while (st__printf_scan_next(&c, &s) == ST__PRINTF_CONV) {
        taken += s.stars + 1;
        if (taken > ev->nargs)
            __builtin_trap(); /* the parser let through a format that reads past the arguments */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st__event_list list;
    struct st__events_error err;
    char msg[2048];
    st__events_init(&list);
    int rc = st__events_parse_buffer(&list, "fuzz", (const char *)data, size, &err);
    bool strict_ok = rc == 0;
    if (rc == 0) {
        for (size_t i = 0; i < list.count; i++)
            scan_format(&list.events[i]);
        /* Parse the same text again as a second file: every name repeats. */
        rc = st__events_parse_buffer(&list, "fuzz2", (const char *)data, size, &err);
        if (rc == 0 && st__events_check(&list, &err) != 0)
            st__events_error_format(&err, msg, sizeof msg);
        if (st__events_build_index(&list) == 0)
            for (size_t i = 0; i < list.count; i++) {
                const char *name = list.events[i].name;
                size_t len = strlen(name);
                if (st__events_find(&list, name, len) == NULL)
                    __builtin_trap(); /* every parsed name must be found */
                (void)st__events_find(&list, name, len / 2); /* a prefix: usually absent */
            }
    } else {
        st__events_error_format(&err, msg, sizeof msg);
    }
    st__events_free(&list);
    /* The readers' lenient parse: what it accepts beyond the strict one carries a warning. */
    st__events_init(&list);
    if (st__events_parse_buffer_flags(&list, "fuzz", (const char *)data, size, ST_EVENTS_LENIENT, &err) == 0)
        for (size_t i = 0; i < list.count; i++) {
            const struct st__event_decl *ev = &list.events[i];
            if (ev->fmt_unfit != (ev->fmt_warning != NULL) || (strict_ok && ev->fmt_unfit))
                __builtin_trap(); /* a mark without its message, or one on what the strict parse took */
            if (!ev->fmt_unfit)
                scan_format(ev);
        }
    else if (strict_ok)
        __builtin_trap(); /* lenient refused what strict accepted */
    st__events_free(&list);
    return 0;
}
