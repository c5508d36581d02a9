/*
 * A strict simpletrace v4 decoder owned by the runtime tests, written from
 * the format specification (spec/simpletrace-format.md section 5), not from
 * the runtime or the reader, so it checks what the writer produces rather
 * than agreeing with it.
 *
 *   file     := header (mapping | event)*
 *   header   := u64 ~0 | u64 0xf2b177cb0aa429b4 | u64 4
 *   mapping  := u64 0 | u64 id | u32 len | len bytes of name
 *   event    := u64 1 | u64 id | u64 ts | u32 length (24 + payload) | u32 pid | payload
 *   dropped  := event with id 0xfffffffffffffffe, length 32, payload u64 count
 *
 * Strict beyond what QEMU's reader needs: the type word is exactly 0 or 1;
 * every event ID has a mapping before its first record; the payload is
 * exactly what the event's argument kinds say ('i' u64, 's' u32 len <= 512
 * + bytes); dropped records have length 32 and a count > 0; pid != 0; the
 * file ends on a record boundary. Errors name the byte offset and record.
 *
 * What a file says about itself (src/format/meta_format.h) rides in mapping
 * records with reserved IDs: the description (ID 0xffffffffffffff00, text
 * starting "simpletrace=1\n") and declarations (ID 0xfffffffe00000000 +
 * event ID), each right after its event's mapping. They are checked here
 * (printable ASCII only, a declaration naming the event just mapped) and
 * counted apart, not delivered as records: QEMU's reader never sees them as
 * anything but unused mappings.
 */
#ifndef ST_TEST_V4_DECODE_H
#define ST_TEST_V4_DECODE_H

#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define V4_HEADER_ID 0xffffffffffffffffull
#define V4_MAGIC 0xf2b177cb0aa429b4ull
#define V4_DROPPED_ID 0xfffffffffffffffeull
#define V4_MAX_ARGS 10
#define V4_MAX_STRLEN 512
#define V4_MAX_NAME 1024
#define V4_META_INFO_ID 0xffffffffffffff00ull
#define V4_META_DECL_BASE 0xfffffffe00000000ull
#define V4_META_MAX (64u << 10)

struct v4_arg {
    uint64_t u;        /* integer value ('i') */
    const char *s;     /* string bytes ('s'), not NUL-terminated */
    uint32_t slen;
};

struct v4_record {
    uint64_t offset;   /* byte offset of the record in the file */
    uint64_t index;    /* record number: 0 is the first after the header */
    int mapping;       /* 1: a mapping record (id, name) */
    int dropped;       /* 1: a dropped record (count in drop_count) */
    uint64_t id;
    const char *name;  /* mapped name (NUL-terminated), "dropped" for dropped */
    uint64_t ts;
    uint32_t pid;
    uint64_t drop_count;
    uint32_t nargs;
    struct v4_arg args[V4_MAX_ARGS];
};

struct v4_summary {
    uint64_t records, mappings, events, dropped_records, dropped_total, bytes;
    uint64_t descriptions, declarations; /* meta records, not counted in records */
};

/* Argument kinds ("iis") of the event called name, or NULL if unknown. */
typedef const char *(*v4_kinds_fn)(const char *name, void *opaque);
/* Called for every record; non-zero stops decoding and is returned. */
typedef int (*v4_visit_fn)(const struct v4_record *rec, void *opaque);

struct v4_decoder {
    v4_kinds_fn kinds;
    void *kinds_opaque;
    v4_visit_fn visit;
    void *visit_opaque;
    char err[512];
    struct v4_summary sum;
    char **names; /* by ID */
    uint64_t nnames;
    char info[4096];     /* the last description's text, NUL-terminated (cut at 4095 bytes) */
    char decl[2048];     /* the last declaration's text */
};

static inline uint64_t v4__u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint32_t v4__u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline int v4__fail(struct v4_decoder *d, uint64_t off, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(d->err, sizeof d->err, "offset %llu, record %llu: ", (unsigned long long)off,
                     (unsigned long long)d->sum.records);
    va_start(ap, fmt);
    vsnprintf(d->err + n, sizeof d->err - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static inline void v4_decoder_free(struct v4_decoder *d)
{
    for (uint64_t i = 0; i < d->nnames; i++)
        free(d->names[i]);
    free(d->names);
    d->names = NULL;
    d->nnames = 0;
}

static inline int v4__map(struct v4_decoder *d, uint64_t off, uint64_t id, const uint8_t *name, uint32_t len)
{
    if (id >= V4_DROPPED_ID)
        return v4__fail(d, off, "mapping for reserved id %#llx", (unsigned long long)id);
    if (id > (1u << 24))
        return v4__fail(d, off, "implausible id %llu", (unsigned long long)id);
    if (len == 0 || len > V4_MAX_NAME)
        return v4__fail(d, off, "mapping name length %u", len);
    for (uint32_t i = 0; i < len; i++)
        if (name[i] < 0x21 || name[i] > 0x7e)
            return v4__fail(d, off, "mapping name has byte %#x", name[i]);
    if (id >= d->nnames) {
        uint64_t n = id + 64;
        char **nn = realloc(d->names, n * sizeof *nn);
        if (!nn)
            return v4__fail(d, off, "out of memory");
        memset(nn + d->nnames, 0, (n - d->nnames) * sizeof *nn);
        d->names = nn;
        d->nnames = n;
    }
    free(d->names[id]);
    d->names[id] = strndup((const char *)name, len);
    return 0;
}

/* Decodes the payload of rec by its kinds; 0 when it is exactly consumed. */
static inline int v4__payload(struct v4_decoder *d, struct v4_record *r, const uint8_t *p, uint32_t len)
{
    const char *kinds = d->kinds ? d->kinds(r->name, d->kinds_opaque) : NULL;
    uint32_t at = 0;

    if (!kinds)
        return v4__fail(d, r->offset, "event '%s' (id %llu) has no known argument kinds", r->name,
                        (unsigned long long)r->id);
    r->nargs = 0;
    for (; *kinds; kinds++) {
        struct v4_arg *a;
        if (r->nargs == V4_MAX_ARGS)
            return v4__fail(d, r->offset, "too many arguments");
        a = &r->args[r->nargs++];
        if (*kinds == 'i') {
            if (len - at < 8)
                return v4__fail(d, r->offset, "'%s': payload too short for argument %u", r->name, r->nargs);
            a->u = v4__u64(p + at);
            at += 8;
        } else if (*kinds == 's') {
            if (len - at < 4)
                return v4__fail(d, r->offset, "'%s': payload too short for string length", r->name);
            a->slen = v4__u32(p + at);
            at += 4;
            if (a->slen > V4_MAX_STRLEN || a->slen > len - at)
                return v4__fail(d, r->offset, "'%s': string length %u", r->name, a->slen);
            a->s = (const char *)p + at;
            at += a->slen;
        } else {
            return v4__fail(d, r->offset, "bad kind '%c'", *kinds);
        }
    }
    if (at != len)
        return v4__fail(d, r->offset, "'%s': payload is %u bytes, arguments take %u", r->name, len, at);
    return 0;
}

/*
 * A description or declaration record at off (name of nlen bytes); last_map
 * is the ID of the mapping just before it (or ~0). 0, or -1 with d->err.
 */
static inline int v4__meta(struct v4_decoder *d, uint64_t off, uint64_t id, const uint8_t *text, uint32_t nlen,
                           uint64_t last_map)
{
    size_t keep;

    if (nlen == 0 || nlen > V4_META_MAX)
        return v4__fail(d, off, "meta record of %u bytes", nlen);
    for (uint32_t i = 0; i < nlen; i++)
        if ((text[i] < 0x20 || text[i] > 0x7e) && text[i] != '\n')
            return v4__fail(d, off, "meta record has byte %#x (ASCII only)", text[i]);
    if (id == V4_META_INFO_ID) {
        if (nlen < 14 || memcmp(text, "simpletrace=1\n", 14) != 0 || text[nlen - 1] != '\n')
            return v4__fail(d, off, "description does not start with simpletrace=1 or end with a newline");
        keep = nlen < sizeof d->info ? nlen : sizeof d->info - 1;
        memcpy(d->info, text, keep);
        d->info[keep] = '\0';
        d->sum.descriptions++;
        return 0;
    }
    if (id - V4_META_DECL_BASE != last_map)
        return v4__fail(d, off, "declaration of id %llu not right after its mapping",
                        (unsigned long long)(id - V4_META_DECL_BASE));
    if (memchr(text, '\n', nlen))
        return v4__fail(d, off, "declaration holds a newline");
    keep = nlen < sizeof d->decl ? nlen : sizeof d->decl - 1;
    memcpy(d->decl, text, keep);
    d->decl[keep] = '\0';
    d->sum.declarations++;
    return 0;
}

/* Decodes a whole file image. 0, the visitor's non-zero value, or -1 with d->err. */
static inline int v4_decode(struct v4_decoder *d, const uint8_t *p, size_t len)
{
    size_t off = 24;
    uint64_t last_map = ~0ull; /* the ID of the record just before, if it was a mapping */

    memset(&d->sum, 0, sizeof d->sum);
    d->err[0] = '\0';
    if (len < 24)
        return v4__fail(d, 0, "file of %zu bytes has no header", len);
    if (v4__u64(p) != V4_HEADER_ID || v4__u64(p + 8) != V4_MAGIC || v4__u64(p + 16) != 4)
        return v4__fail(d, 0, "bad header");
    while (off < len) {
        struct v4_record r;
        uint64_t type;
        int ret;

        memset(&r, 0, sizeof r);
        r.offset = off;
        r.index = d->sum.records;
        if (len - off < 8)
            return v4__fail(d, off, "truncated type word");
        type = v4__u64(p + off);
        if (type == 0) {
            uint32_t nlen;
            if (len - off < 20)
                return v4__fail(d, off, "truncated mapping");
            r.mapping = 1;
            r.id = v4__u64(p + off + 8);
            nlen = v4__u32(p + off + 16);
            if (nlen > len - off - 20)
                return v4__fail(d, off, "mapping name runs past the end");
            if (r.id == V4_META_INFO_ID || (r.id >> 32) == (V4_META_DECL_BASE >> 32)) {
                if (v4__meta(d, off, r.id, p + off + 20, nlen, last_map) < 0)
                    return -1;
                off += 20 + (size_t)nlen;
                last_map = ~0ull;
                continue;
            }
            last_map = r.id;
            if (v4__map(d, off, r.id, p + off + 20, nlen) < 0)
                return -1;
            r.name = d->names[r.id];
            off += 20 + (size_t)nlen;
            d->sum.mappings++;
        } else if (type == 1) {
            uint32_t length;
            last_map = ~0ull;
            if (len - off < 32)
                return v4__fail(d, off, "truncated event header");
            r.id = v4__u64(p + off + 8);
            r.ts = v4__u64(p + off + 16);
            length = v4__u32(p + off + 24);
            r.pid = v4__u32(p + off + 28);
            if (length < 24)
                return v4__fail(d, off, "length %u < 24", length);
            if ((uint64_t)length + 8 > len - off)
                return v4__fail(d, off, "record of %u bytes runs past the end", length + 8);
            if (r.pid == 0)
                return v4__fail(d, off, "pid 0");
            if (r.id == V4_DROPPED_ID) {
                if (length != 32)
                    return v4__fail(d, off, "dropped record length %u", length);
                r.dropped = 1;
                r.name = "dropped";
                r.drop_count = v4__u64(p + off + 32);
                if (r.drop_count == 0)
                    return v4__fail(d, off, "dropped record with count 0");
                d->sum.dropped_records++;
                d->sum.dropped_total += r.drop_count;
            } else {
                if (r.id >= d->nnames || !d->names[r.id])
                    return v4__fail(d, off, "event id %llu has no mapping", (unsigned long long)r.id);
                r.name = d->names[r.id];
                if (v4__payload(d, &r, p + off + 32, length - 24) < 0)
                    return -1;
                d->sum.events++;
            }
            off += 8 + (size_t)length;
        } else {
            return v4__fail(d, off, "record type %llu", (unsigned long long)type);
        }
        d->sum.records++;
        if (d->visit && (ret = d->visit(&r, d->visit_opaque)) != 0)
            return ret;
    }
    d->sum.bytes = len;
    return 0;
}

/* Maps path and decodes it. */
static inline int v4_decode_file(struct v4_decoder *d, const char *path)
{
    struct stat st;
    void *p;
    int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

    if (fd < 0) {
        snprintf(d->err, sizeof d->err, "%s: cannot open", path);
        return -1;
    }
    if (fstat(fd, &st) < 0 || st.st_size == 0) {
        close(fd);
        snprintf(d->err, sizeof d->err, "%s: empty", path);
        return -1;
    }
    p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(d->err, sizeof d->err, "%s: mmap failed", path);
        return -1;
    }
    ret = v4_decode(d, p, (size_t)st.st_size);
    munmap(p, (size_t)st.st_size);
    return ret;
}

#endif /* ST_TEST_V4_DECODE_H */
