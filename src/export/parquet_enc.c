/*
 * The Parquet encoder (parquet_enc.h; layout and the Thrift compact
 * protocol: src/format/parquet_format.h).
 *
 * A column buffers its row group's values as their PLAIN bytes (an
 * INT64's 8 bytes little-endian, a BYTE_ARRAY's length and bytes) or, for
 * a dictionary column, its indices, with the dictionary's PLAIN bytes
 * beside them; a BOOLEAN one byte per value, packed when written. An
 * optional column keeps definition levels only once it has had a NULL
 * (until then every level is 1: one RLE run). At a flush each column
 * chunk becomes [dictionary page] data page, each page compressed with
 * zstd as a whole, and the row group's pages are appended to the file in
 * one write. The footer is written at finish from what each flush kept.
 */
#include "parquet_enc.h"

#include <simpletrace/version.h>

#include "parquet_format.h"
#include "utf8.h"
#include "write_all.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

/* A dictionary column's caller id: its index in the row group's dictionary, valid when stamp is the row group's
 * number + 1. */
struct dict_slot {
    uint32_t index, stamp;
};

/* What the footer needs of one column chunk written. */
struct chunk_meta {
    uint64_t data_offset, dict_offset; /* dict_offset 0: no dictionary page */
    uint64_t compressed, uncompressed; /* pages with their headers */
    uint64_t values, nulls;
    uint64_t min, max;                 /* for integer columns with values */
};

struct group_meta {
    uint64_t rows, offset, compressed, uncompressed;
};

struct column {
    char *name;
    enum st__pq_kind kind;
    bool optional;
    struct st__growbuf vals;   /* PLAIN bytes; BOOL: a byte each; DICT: uint32 indices */
    uint32_t *defs;            /* definition levels of every row, once a NULL came (NULL before) */
    size_t defs_cap;
    uint64_t nulls;            /* of this row group */
    uint64_t min, max;         /* integers: of this row group's values */
    bool have_minmax;
    struct st__growbuf dict;   /* DICT: this row group's dictionary, PLAIN */
    uint32_t ndict;
    struct dict_slot *ids;     /* DICT: by caller id */
    size_t nids;               /* allocated */
    struct chunk_meta *chunks; /* one per row group written */
};

struct st__pq_file {
    struct st__pq_shared *sh;
    int dirfd;
    const char *path;
    bool created;              /* the file exists (its magic written) */
    bool failed;               /* an allocation failed */
    uint64_t offset;           /* bytes written so far */
    struct column *cols;
    size_t ncols;
    struct st__pq_kv *kv;
    size_t nkv;
    uint64_t rows;             /* of the row group being filled */
    uint64_t total_rows;       /* written */
    struct group_meta *groups;
    size_t ngroups, capgroups;
};

/* --- little helpers ------------------------------------------------------------------- */

static inline void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static void gb_varint(struct st__growbuf *b, uint64_t v)
{
    uint8_t tmp[10];
    st__growbuf_put(b, tmp, (size_t)(put_varint(tmp, v) - tmp));
}

/* Makes *arr (elements of size elem, *cap allocated) hold at least n. 0 or -ENOMEM. */
static int reserve(void *arr, size_t *cap, size_t n, size_t elem)
{
    if (n <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < n)
        c *= 2;
    void *v = realloc(*(void **)arr, c * elem);
    if (!v)
        return -ENOMEM;
    *(void **)arr = v;
    *cap = c;
    return 0;
}

/* --- Thrift compact protocol ------------------------------------------------------------ */

/* A field header: the type, the id as a delta from the previous field of the struct (*last). */
static void tc_field(struct st__growbuf *b, int *last, int id, unsigned type)
{
    int delta = id - *last;
    if (delta > 0 && delta <= 15) {
        uint8_t h = (uint8_t)(delta << 4 | (int)type);
        st__growbuf_put(b, &h, 1);
    } else {
        uint8_t t = (uint8_t)type;
        st__growbuf_put(b, &t, 1);
        gb_varint(b, (uint64_t)(((int64_t)id << 1) ^ ((int64_t)id >> 63)));
    }
    *last = id;
}

static void tc_zigzag(struct st__growbuf *b, int64_t v)
{
    gb_varint(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void tc_int(struct st__growbuf *b, int *last, int id, unsigned type, int64_t v)
{
    tc_field(b, last, id, type);
    tc_zigzag(b, v);
}

static void tc_i32(struct st__growbuf *b, int *last, int id, int32_t v)
{
    tc_int(b, last, id, ST_TC_I32, v);
}

static void tc_i64(struct st__growbuf *b, int *last, int id, int64_t v)
{
    tc_int(b, last, id, ST_TC_I64, v);
}

static void tc_binary(struct st__growbuf *b, int *last, int id, const void *s, size_t n)
{
    tc_field(b, last, id, ST_TC_BINARY);
    gb_varint(b, n);
    st__growbuf_put(b, s, n);
}

static void tc_string(struct st__growbuf *b, int *last, int id, const char *s)
{
    tc_binary(b, last, id, s, strlen(s));
}

static void tc_bool(struct st__growbuf *b, int *last, int id, bool v)
{
    tc_field(b, last, id, v ? ST_TC_TRUE : ST_TC_FALSE);
}

/* A list header: n elements of type. */
static void tc_list(struct st__growbuf *b, size_t n, unsigned type)
{
    if (n < 15) {
        uint8_t h = (uint8_t)(n << 4 | type);
        st__growbuf_put(b, &h, 1);
    } else {
        uint8_t h = (uint8_t)(0xf0 | type);
        st__growbuf_put(b, &h, 1);
        gb_varint(b, n);
    }
}

/* A list field's header. */
static void tc_list_field(struct st__growbuf *b, int *last, int id, size_t n, unsigned type)
{
    tc_field(b, last, id, ST_TC_LIST);
    tc_list(b, n, type);
}

static void tc_stop(struct st__growbuf *b)
{
    uint8_t z = ST_TC_STOP;
    st__growbuf_put(b, &z, 1);
}

/* A field holding an empty struct (a union member without data: STRING, TYPE_ORDER, NANOS). */
static void tc_empty(struct st__growbuf *b, int *last, int id)
{
    tc_field(b, last, id, ST_TC_STRUCT);
    tc_stop(b);
}

/* --- the RLE/bit-packed hybrid ---------------------------------------------------------- */

/* Bits needed for v (at least 1: some readers take width 0 badly). */
static unsigned bit_width(uint32_t v)
{
    unsigned w = 1;
    while (w < 32 && (v >> w))
        w++;
    return w;
}

/* Length of the run of equal values at v[i..n), counting at most max. */
static size_t run_at(const uint32_t *v, size_t i, size_t n, size_t max)
{
    size_t j = i + 1;
    while (j < n && j - i < max && v[j] == v[i])
        j++;
    return j - i;
}

static void rle_run(struct st__growbuf *b, uint32_t value, size_t count, unsigned w)
{
    gb_varint(b, (uint64_t)count << 1);
    uint8_t tmp[4];
    put_le32(tmp, value);
    st__growbuf_put(b, tmp, (w + 7) / 8);
}

/* Bit-packs v[i..i + groups * 8), values beyond n being 0. */
static void packed_run(struct st__growbuf *b, const uint32_t *v, size_t i, size_t groups, size_t n, unsigned w)
{
    gb_varint(b, (uint64_t)groups << 1 | 1);
    size_t bytes = groups * w; /* 8 values of w bits: w bytes */
    uint8_t *p = st__growbuf_room(b, bytes);
    if (!p)
        return;
    memset(p, 0, bytes);
    size_t bit = 0;
    for (size_t k = i; k < i + groups * 8; k++) {
        uint64_t x = k < n ? v[k] : 0;
        for (unsigned done = 0; done < w;) { /* w <= 32: at most 5 bytes touched */
            unsigned at = (unsigned)(bit & 7), take = 8 - at < w - done ? 8 - at : w - done;
            p[bit >> 3] |= (uint8_t)(((x >> done) & ((1u << take) - 1)) << at);
            done += take;
            bit += take;
        }
    }
    st__growbuf_commit(b, bytes);
}

/*
 * The hybrid of v[0..n) at width w: runs of 8 or more equal values are RLE
 * runs, the rest bit-packed in groups of 8 (the last group padded with 0).
 */
static void hybrid(struct st__growbuf *b, const uint32_t *v, size_t n, unsigned w)
{
    size_t i = 0;
    while (i < n) {
        size_t run = run_at(v, i, n, SIZE_MAX);
        if (run >= 8) {
            rle_run(b, v[i], run, w);
            i += run;
            continue;
        }
        size_t start = i;
        do
            i += 8;
        while (i < n && run_at(v, i, n, 8) < 8);
        if (i > n)
            i = n;
        packed_run(b, v, start, (i - start + 7) / 8, n, w);
    }
}

/* --- columns ---------------------------------------------------------------------------- */

static bool is_int(enum st__pq_kind k)
{
    return k == ST__PQ_I64 || k == ST__PQ_U64 || k == ST__PQ_TIMESTAMP;
}

static bool is_signed(enum st__pq_kind k)
{
    return k == ST__PQ_I64 || k == ST__PQ_TIMESTAMP;
}

/* A definition level for the row being filled (1: a value). */
static void put_def(struct st__pq_file *f, struct column *c, uint32_t level)
{
    if (!c->defs && level == 1)
        return; /* no NULL yet: every level is 1 */
    if (reserve(&c->defs, &c->defs_cap, f->rows + 1, sizeof *c->defs) < 0) {
        f->failed = true;
        return;
    }
    if (c->nulls == 0 && level == 0) /* the first NULL: the levels before it were all 1 */
        for (uint64_t r = 0; r < f->rows; r++)
            c->defs[r] = 1;
    c->defs[f->rows] = level;
}

void st__pq_int(struct st__pq_file *f, size_t col, uint64_t v)
{
    struct column *c = &f->cols[col];
    if (c->optional)
        put_def(f, c, 1);
    uint8_t *p = st__growbuf_room(&c->vals, 8);
    if (!p)
        return;
    put_le64(p, v);
    st__growbuf_commit(&c->vals, 8);
    bool less = is_signed(c->kind) ? (int64_t)v < (int64_t)c->min : v < c->min;
    bool more = is_signed(c->kind) ? (int64_t)v > (int64_t)c->max : v > c->max;
    if (!c->have_minmax) {
        c->min = c->max = v;
        c->have_minmax = true;
    } else if (less) {
        c->min = v;
    } else if (more) {
        c->max = v;
    }
}

void st__pq_bool(struct st__pq_file *f, size_t col, bool v)
{
    struct column *c = &f->cols[col];
    if (c->optional)
        put_def(f, c, 1);
    uint8_t b = v;
    st__growbuf_put(&c->vals, &b, 1);
}

/* Appends s as a PLAIN BYTE_ARRAY (length, bytes) to b, repaired to valid UTF-8. */
static void put_text(struct st__growbuf *b, const void *s, size_t n)
{
    uint8_t *p = st__growbuf_room(b, 4 + ST__UTF8_REPAIRED_MAX(n));
    if (!p)
        return;
    size_t len = (size_t)(st__utf8_repair(p + 4, s, n) - (p + 4));
    put_le32(p, (uint32_t)len);
    st__growbuf_commit(b, 4 + len);
}

void st__pq_text(struct st__pq_file *f, size_t col, const void *s, size_t n)
{
    struct column *c = &f->cols[col];
    if (c->optional)
        put_def(f, c, 1);
    put_text(&c->vals, s, n);
}

void st__pq_dict(struct st__pq_file *f, size_t col, uint32_t id, const void *s, size_t n)
{
    struct column *c = &f->cols[col];
    if (c->optional)
        put_def(f, c, 1);
    if (id >= c->nids) {
        size_t cap = c->nids;
        if (reserve(&c->ids, &cap, (size_t)id + 1, sizeof *c->ids) < 0) {
            f->failed = true;
            return;
        }
        memset(c->ids + c->nids, 0, (cap - c->nids) * sizeof *c->ids);
        c->nids = cap;
    }
    struct dict_slot *d = &c->ids[id];
    uint32_t stamp = (uint32_t)f->ngroups + 1;
    if (d->stamp != stamp) { /* new in this row group */
        d->stamp = stamp;
        d->index = c->ndict++;
        put_text(&c->dict, s, n);
    }
    uint32_t k = d->index;
    st__growbuf_put(&c->vals, &k, sizeof k);
}

void st__pq_null(struct st__pq_file *f, size_t col)
{
    struct column *c = &f->cols[col];
    put_def(f, c, 0);
    c->nulls++;
}

uint64_t st__pq_rows(const struct st__pq_file *f)
{
    return f->total_rows + f->rows;
}

size_t st__pq_buffered(const struct st__pq_file *f)
{
    size_t n = 0;
    for (size_t i = 0; i < f->ncols; i++)
        n += f->cols[i].vals.len + f->cols[i].dict.len + (f->cols[i].defs ? f->rows * sizeof(uint32_t) : 0);
    return n;
}

/* --- pages ---------------------------------------------------------------------------------- */

/* Compresses sh->raw into sh->zbuf. 0 or -ENOMEM (-EIO for a zstd error, which cannot happen with our sizes). */
static int compress_raw(struct st__pq_shared *sh)
{
    size_t bound = ZSTD_compressBound(sh->raw.len);
    sh->zbuf.len = 0;
    uint8_t *p = st__growbuf_room(&sh->zbuf, bound ? bound : 1);
    if (!p)
        return -ENOMEM;
    size_t n = ZSTD_compressCCtx(sh->zctx, p, bound, sh->raw.data ? sh->raw.data : (const void *)"", sh->raw.len,
                                 sh->level);
    if (ZSTD_isError(n))
        return -EIO;
    st__growbuf_commit(&sh->zbuf, n);
    return 0;
}

/* Appends a page (its header, then sh->zbuf) to sh->out; adds its sizes to m. */
static void put_page(struct st__pq_shared *sh, struct chunk_meta *m, int type, uint32_t values, int encoding)
{
    struct st__growbuf *b = &sh->out;
    size_t start = b->len;
    int last = 0, inner = 0;
    tc_i32(b, &last, ST_PQ_PH_TYPE, type);
    tc_i32(b, &last, ST_PQ_PH_UNCOMPRESSED, (int32_t)sh->raw.len);
    tc_i32(b, &last, ST_PQ_PH_COMPRESSED, (int32_t)sh->zbuf.len);
    if (type == ST_PQ_PAGE_DICTIONARY) {
        tc_field(b, &last, ST_PQ_PH_DICTIONARY, ST_TC_STRUCT);
        tc_i32(b, &inner, ST_PQ_DICT_NUM_VALUES, (int32_t)values);
        tc_i32(b, &inner, ST_PQ_DICT_ENCODING, ST_PQ_ENC_PLAIN);
    } else {
        tc_field(b, &last, ST_PQ_PH_DATA, ST_TC_STRUCT);
        tc_i32(b, &inner, ST_PQ_DPH_NUM_VALUES, (int32_t)values);
        tc_i32(b, &inner, ST_PQ_DPH_ENCODING, encoding);
        tc_i32(b, &inner, ST_PQ_DPH_DEF_ENCODING, ST_PQ_ENC_RLE);
        tc_i32(b, &inner, ST_PQ_DPH_REP_ENCODING, ST_PQ_ENC_RLE);
    }
    tc_stop(b); /* the inner header */
    tc_stop(b); /* PageHeader */
    size_t header = b->len - start;
    st__growbuf_put(b, sh->zbuf.data, sh->zbuf.len);
    m->compressed += header + sh->zbuf.len;
    m->uncompressed += header + sh->raw.len;
}

/* The definition levels of c (rows of them) into sh->raw: a 4-byte length, then the hybrid at width 1. */
static void put_levels(struct st__pq_shared *sh, const struct column *c, uint64_t rows)
{
    size_t at = sh->raw.len;
    uint8_t *p = st__growbuf_room(&sh->raw, 4);
    if (!p)
        return;
    st__growbuf_commit(&sh->raw, 4);
    if (c->defs)
        hybrid(&sh->raw, c->defs, rows, 1);
    else if (rows)
        rle_run(&sh->raw, 1, rows, 1);
    if (!sh->raw.failed)
        put_le32(sh->raw.data + at, (uint32_t)(sh->raw.len - at - 4));
}

/* c's values into sh->raw, in the data page's encoding. */
static void put_values(struct st__pq_shared *sh, const struct column *c, uint64_t rows)
{
    uint64_t n = rows - c->nulls;
    if (c->kind == ST__PQ_BOOL) {
        uint8_t *p = st__growbuf_room(&sh->raw, (n + 7) / 8);
        if (!p)
            return;
        memset(p, 0, (n + 7) / 8);
        for (uint64_t i = 0; i < n; i++)
            p[i >> 3] |= (uint8_t)((c->vals.data[i] & 1) << (i & 7));
        st__growbuf_commit(&sh->raw, (n + 7) / 8);
    } else if (c->kind == ST__PQ_DICT) {
        uint8_t w = (uint8_t)bit_width(c->ndict ? c->ndict - 1 : 0);
        st__growbuf_put(&sh->raw, &w, 1);
        hybrid(&sh->raw, (const uint32_t *)(const void *)c->vals.data, n, w);
    } else {
        st__growbuf_put(&sh->raw, c->vals.data, c->vals.len);
    }
}

/* Column chunk c of the row group into sh->out: [dictionary page] data page; its footer entry in *m. */
static int put_chunk(struct st__pq_file *f, struct column *c, struct chunk_meta *m)
{
    struct st__pq_shared *sh = f->sh;
    int ret;
    *m = (struct chunk_meta){.values = f->rows, .nulls = c->nulls, .min = c->min, .max = c->max};
    if (c->kind == ST__PQ_DICT) {
        m->dict_offset = f->offset + sh->out.len;
        sh->raw.len = 0;
        st__growbuf_put(&sh->raw, c->dict.data, c->dict.len);
        if ((ret = compress_raw(sh)) < 0)
            return ret;
        put_page(sh, m, ST_PQ_PAGE_DICTIONARY, c->ndict, ST_PQ_ENC_PLAIN);
    }
    m->data_offset = f->offset + sh->out.len;
    sh->raw.len = 0;
    if (c->optional)
        put_levels(sh, c, f->rows);
    put_values(sh, c, f->rows);
    if (sh->raw.failed)
        return -ENOMEM;
    if ((ret = compress_raw(sh)) < 0)
        return ret;
    put_page(sh, m, ST_PQ_PAGE_DATA, (uint32_t)f->rows, c->kind == ST__PQ_DICT ? ST_PQ_ENC_RLE_DICTIONARY : ST_PQ_ENC_PLAIN);
    return sh->out.failed ? -ENOMEM : 0;
}

/* Appends sh->out to the file (created, with its magic, the first time). */
static int append(struct st__pq_file *f)
{
    struct st__pq_shared *sh = f->sh;
    int flags = O_WRONLY | O_APPEND | O_CLOEXEC | (f->created ? 0 : O_CREAT | O_EXCL);
    int fd = openat(f->dirfd, f->path, flags, 0666);
    if (fd < 0)
        return -errno;
    int ret = f->created ? 0 : st__write_all(fd, ST_PQ_MAGIC, ST_PQ_MAGIC_BYTES);
    f->created = true; /* f->offset counted the magic from the start */
    if (ret == 0)
        ret = st__write_all(fd, sh->out.data, sh->out.len);
    if (close(fd) != 0 && ret == 0)
        ret = -errno;
    if (ret == 0)
        f->offset += sh->out.len;
    sh->out.len = 0;
    return ret;
}

/* Empties the columns for the next row group. */
static void reset(struct st__pq_file *f)
{
    for (size_t i = 0; i < f->ncols; i++) {
        struct column *c = &f->cols[i];
        c->vals.len = c->dict.len = 0;
        c->ndict = 0;
        c->nulls = 0;
        c->have_minmax = false;
        free(c->defs);
        c->defs = NULL;
        c->defs_cap = 0;
    }
    f->rows = 0;
}

static int create_empty(struct st__pq_file *f)
{
    f->sh->out.len = 0;
    return append(f);
}

int st__pq_flush(struct st__pq_file *f)
{
    if (f->failed)
        return -ENOMEM;
    if (f->rows == 0)
        return 0;
    if (reserve(&f->groups, &f->capgroups, f->ngroups + 1, sizeof *f->groups) < 0)
        return -ENOMEM;
    struct st__pq_shared *sh = f->sh;
    sh->out.len = 0;
    struct group_meta g = {.rows = f->rows, .offset = f->offset};
    for (size_t i = 0; i < f->ncols; i++) {
        struct column *c = &f->cols[i];
        struct chunk_meta *m = realloc(c->chunks, (f->ngroups + 1) * sizeof *m);
        if (!m)
            return -ENOMEM;
        c->chunks = m;
        int ret = put_chunk(f, c, &m[f->ngroups]);
        if (ret < 0)
            return ret;
        g.compressed += m[f->ngroups].compressed;
        g.uncompressed += m[f->ngroups].uncompressed;
    }
    int ret = append(f);
    if (ret < 0)
        return ret;
    f->groups[f->ngroups++] = g;
    f->total_rows += f->rows;
    reset(f);
    return 0;
}

int st__pq_row_end(struct st__pq_file *f)
{
    f->rows++;
    for (size_t i = 0; i < f->ncols; i++)
        if (f->cols[i].vals.failed || f->cols[i].dict.failed)
            f->failed = true;
    if (f->failed)
        return -ENOMEM;
    return f->rows >= ST__PQ_GROUP_ROWS ? st__pq_flush(f) : 0;
}

/* --- the footer ------------------------------------------------------------------------------ */

static void schema_element(struct st__growbuf *b, const struct column *c)
{
    int last = 0, inner = 0, inner2 = 0;
    bool bytes = c->kind == ST__PQ_STRING || c->kind == ST__PQ_JSON || c->kind == ST__PQ_DICT;
    tc_i32(b, &last, ST_PQ_SE_TYPE, c->kind == ST__PQ_BOOL ? ST_PQ_BOOLEAN : bytes ? ST_PQ_BYTE_ARRAY : ST_PQ_INT64);
    tc_i32(b, &last, ST_PQ_SE_REPETITION, c->optional ? ST_PQ_OPTIONAL : ST_PQ_REQUIRED);
    tc_string(b, &last, ST_PQ_SE_NAME, c->name);
    switch (c->kind) {
    case ST__PQ_BOOL:
        break;
    case ST__PQ_TIMESTAMP: /* no ConvertedType says nanoseconds: LogicalType only */
        tc_field(b, &last, ST_PQ_SE_LOGICAL, ST_TC_STRUCT);
        tc_field(b, &inner, ST_PQ_LOGICAL_TIMESTAMP, ST_TC_STRUCT);
        tc_bool(b, &inner2, ST_PQ_TS_ADJUSTED_UTC, false); /* UTC all the same: see parquet.c, "ts" */
        tc_field(b, &inner2, ST_PQ_TS_UNIT, ST_TC_STRUCT);
        inner = 0;
        tc_empty(b, &inner, ST_PQ_TIME_UNIT_NANOS);
        tc_stop(b); /* TimeUnit */
        tc_stop(b); /* TimestampType */
        tc_stop(b); /* LogicalType */
        break;
    case ST__PQ_I64:
    case ST__PQ_U64:
        tc_i32(b, &last, ST_PQ_SE_CONVERTED, c->kind == ST__PQ_U64 ? ST_PQ_CONVERTED_UINT_64 : ST_PQ_CONVERTED_INT_64);
        tc_field(b, &last, ST_PQ_SE_LOGICAL, ST_TC_STRUCT);
        tc_field(b, &inner, ST_PQ_LOGICAL_INTEGER, ST_TC_STRUCT);
        tc_field(b, &inner2, ST_PQ_INT_BIT_WIDTH, ST_TC_I8);
        st__growbuf_put(b, "\x40", 1); /* 64, an i8 is one plain byte */
        tc_bool(b, &inner2, ST_PQ_INT_SIGNED, c->kind == ST__PQ_I64);
        tc_stop(b); /* IntType */
        tc_stop(b); /* LogicalType */
        break;
    default: {
        bool json = c->kind == ST__PQ_JSON;
        tc_i32(b, &last, ST_PQ_SE_CONVERTED, json ? ST_PQ_CONVERTED_JSON : ST_PQ_CONVERTED_UTF8);
        tc_field(b, &last, ST_PQ_SE_LOGICAL, ST_TC_STRUCT);
        tc_empty(b, &inner, json ? ST_PQ_LOGICAL_JSON : ST_PQ_LOGICAL_STRING);
        tc_stop(b); /* LogicalType */
    }
    }
    tc_stop(b);
}

static void statistics(struct st__growbuf *b, int *last, const struct column *c, const struct chunk_meta *m)
{
    int inner = 0;
    tc_field(b, last, ST_PQ_CMD_STATISTICS, ST_TC_STRUCT);
    tc_i64(b, &inner, ST_PQ_STAT_NULL_COUNT, (int64_t)m->nulls);
    if (is_int(c->kind) && m->values > m->nulls) {
        uint8_t v[8];
        put_le64(v, m->max);
        tc_binary(b, &inner, ST_PQ_STAT_MAX_VALUE, v, 8);
        put_le64(v, m->min);
        tc_binary(b, &inner, ST_PQ_STAT_MIN_VALUE, v, 8);
    }
    tc_stop(b);
}

static void column_chunk(struct st__growbuf *b, const struct column *c, const struct chunk_meta *m)
{
    int last = 0, meta = 0;
    tc_i64(b, &last, ST_PQ_CC_FILE_OFFSET, 0);
    tc_field(b, &last, ST_PQ_CC_META_DATA, ST_TC_STRUCT);
    bool bytes = c->kind == ST__PQ_STRING || c->kind == ST__PQ_JSON || c->kind == ST__PQ_DICT;
    tc_i32(b, &meta, ST_PQ_CMD_TYPE, c->kind == ST__PQ_BOOL ? ST_PQ_BOOLEAN : bytes ? ST_PQ_BYTE_ARRAY : ST_PQ_INT64);
    bool dict = c->kind == ST__PQ_DICT;
    tc_list_field(b, &meta, ST_PQ_CMD_ENCODINGS, dict ? 3 : 2, ST_TC_I32);
    tc_zigzag(b, ST_PQ_ENC_PLAIN);
    tc_zigzag(b, ST_PQ_ENC_RLE);
    if (dict)
        tc_zigzag(b, ST_PQ_ENC_RLE_DICTIONARY);
    tc_list_field(b, &meta, ST_PQ_CMD_PATH, 1, ST_TC_BINARY);
    gb_varint(b, strlen(c->name));
    st__growbuf_puts(b, c->name);
    tc_i32(b, &meta, ST_PQ_CMD_CODEC, ST_PQ_CODEC_ZSTD);
    tc_i64(b, &meta, ST_PQ_CMD_NUM_VALUES, (int64_t)m->values);
    tc_i64(b, &meta, ST_PQ_CMD_UNCOMPRESSED, (int64_t)m->uncompressed);
    tc_i64(b, &meta, ST_PQ_CMD_COMPRESSED, (int64_t)m->compressed);
    tc_i64(b, &meta, ST_PQ_CMD_DATA_PAGE_OFFSET, (int64_t)m->data_offset);
    if (dict)
        tc_i64(b, &meta, ST_PQ_CMD_DICT_PAGE_OFFSET, (int64_t)m->dict_offset);
    statistics(b, &meta, c, m);
    tc_stop(b); /* ColumnMetaData */
    tc_stop(b); /* ColumnChunk */
}

static void footer(struct st__pq_file *f, struct st__growbuf *b)
{
    int last = 0;
    tc_i32(b, &last, ST_PQ_FMD_VERSION, ST_PQ_FILE_VERSION);
    tc_list_field(b, &last, ST_PQ_FMD_SCHEMA, f->ncols + 1, ST_TC_STRUCT);
    int root = 0;
    tc_string(b, &root, ST_PQ_SE_NAME, "schema");
    tc_i32(b, &root, ST_PQ_SE_NUM_CHILDREN, (int32_t)f->ncols);
    tc_stop(b);
    for (size_t i = 0; i < f->ncols; i++)
        schema_element(b, &f->cols[i]);
    tc_i64(b, &last, ST_PQ_FMD_NUM_ROWS, (int64_t)f->total_rows);
    tc_list_field(b, &last, ST_PQ_FMD_ROW_GROUPS, f->ngroups, ST_TC_STRUCT);
    for (size_t g = 0; g < f->ngroups; g++) {
        int rg = 0;
        tc_list_field(b, &rg, ST_PQ_RG_COLUMNS, f->ncols, ST_TC_STRUCT);
        for (size_t i = 0; i < f->ncols; i++)
            column_chunk(b, &f->cols[i], &f->cols[i].chunks[g]);
        tc_i64(b, &rg, ST_PQ_RG_TOTAL_BYTE_SIZE, (int64_t)f->groups[g].uncompressed);
        tc_i64(b, &rg, ST_PQ_RG_NUM_ROWS, (int64_t)f->groups[g].rows);
        tc_i64(b, &rg, ST_PQ_RG_FILE_OFFSET, (int64_t)f->groups[g].offset);
        tc_i64(b, &rg, ST_PQ_RG_TOTAL_COMPRESSED, (int64_t)f->groups[g].compressed);
        tc_int(b, &rg, ST_PQ_RG_ORDINAL, ST_TC_I16, (int64_t)(g & 0x7fff));
        tc_stop(b);
    }
    if (f->nkv) {
        tc_list_field(b, &last, ST_PQ_FMD_KEY_VALUE, f->nkv, ST_TC_STRUCT);
        for (size_t i = 0; i < f->nkv; i++) {
            int kv = 0;
            tc_string(b, &kv, ST_PQ_KV_KEY, f->kv[i].key);
            tc_string(b, &kv, ST_PQ_KV_VALUE, f->kv[i].value);
            tc_stop(b);
        }
    }
    tc_string(b, &last, ST_PQ_FMD_CREATED_BY, "simpletrace version " SIMPLETRACE_VERSION_STRING);
    tc_list_field(b, &last, ST_PQ_FMD_COLUMN_ORDERS, f->ncols, ST_TC_STRUCT);
    for (size_t i = 0; i < f->ncols; i++) {
        int order = 0;
        tc_empty(b, &order, ST_PQ_ORDER_TYPE_ORDER);
        tc_stop(b);
    }
    tc_stop(b);
}

int st__pq_finish(struct st__pq_file *f)
{
    int ret = st__pq_flush(f);
    if (ret == 0 && !f->created)
        ret = create_empty(f);
    if (ret < 0)
        return ret;
    struct st__growbuf *b = &f->sh->out;
    b->len = 0;
    footer(f, b);
    uint8_t tail[8];
    put_le32(tail, (uint32_t)b->len);
    memcpy(tail + 4, ST_PQ_MAGIC, ST_PQ_MAGIC_BYTES);
    st__growbuf_put(b, tail, sizeof tail);
    return b->failed ? -ENOMEM : append(f);
}

/* --- set-up ---------------------------------------------------------------------------------- */

int st__pq_shared_init(struct st__pq_shared *s, int level)
{
    memset(s, 0, sizeof *s);
    s->level = level;
    s->zctx = ZSTD_createCCtx();
    return s->zctx ? 0 : -ENOMEM;
}

void st__pq_shared_free(struct st__pq_shared *s)
{
    ZSTD_freeCCtx(s->zctx);
    st__growbuf_free(&s->raw);
    st__growbuf_free(&s->zbuf);
    st__growbuf_free(&s->out);
    memset(s, 0, sizeof *s);
}

int st__pq_new(struct st__pq_file **out, struct st__pq_shared *sh, int dirfd, const char *path,
               const struct st__pq_column *cols, size_t ncols, const struct st__pq_kv *kv, size_t nkv)
{
    struct st__pq_file *f = calloc(1, sizeof *f);
    if (!f)
        return -ENOMEM;
    f->sh = sh;
    f->offset = ST_PQ_MAGIC_BYTES; /* the first append writes the magic before the pages */
    f->dirfd = dirfd;
    f->path = path;
    f->cols = calloc(ncols ? ncols : 1, sizeof *f->cols);
    f->kv = calloc(nkv ? nkv : 1, sizeof *f->kv);
    f->ncols = ncols;
    bool bad = !f->cols || !f->kv;
    for (size_t i = 0; !bad && i < ncols; i++) {
        f->cols[i].kind = cols[i].kind;
        f->cols[i].optional = cols[i].optional;
        bad = !(f->cols[i].name = strdup(cols[i].name));
    }
    for (size_t i = 0; !bad && i < nkv; i++) {
        f->kv[i].key = strdup(kv[i].key);
        f->kv[i].value = strdup(kv[i].value);
        f->nkv = i + 1; /* freed with the others, even half made */
        bad = !f->kv[i].key || !f->kv[i].value;
    }
    if (bad) {
        st__pq_free(f);
        return -ENOMEM;
    }
    *out = f;
    return 0;
}

void st__pq_free(struct st__pq_file *f)
{
    if (!f)
        return;
    for (size_t i = 0; f->cols && i < f->ncols; i++) {
        struct column *c = &f->cols[i];
        free(c->name);
        st__growbuf_free(&c->vals);
        st__growbuf_free(&c->dict);
        free(c->defs);
        free(c->ids);
        free(c->chunks);
    }
    for (size_t i = 0; i < f->nkv; i++) {
        free((char *)f->kv[i].key);
        free((char *)f->kv[i].value);
    }
    free(f->kv);
    free(f->cols);
    free(f->groups);
    free(f);
}
