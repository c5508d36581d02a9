/*
 * The growable buffer (src/common/growbuf.h): growth keeps every byte,
 * room/commit, printf on both sides of its stack buffer, and the failed
 * flag: set by an impossible request, sticky (later appends do nothing,
 * what was there stays), cleared by free.
 */
#include "tap.h"

#include "growbuf.h"

#include <stdbool.h>
#include <stdint.h>

/* True when cap is 256 doubled some number of times (the growth rule). */
static bool doubling(size_t cap)
{
    for (size_t c = 256; c; c *= 2)
        if (c == cap)
            return true;
    return false;
}

static void test_growth(void)
{
    struct st__growbuf b = {0};
    bool same = true;
    size_t caps = 0, last_cap = 0;

    ok(b.data == NULL && b.len == 0 && !b.failed, "empty: nothing allocated");
    for (int i = 0; i < 5000; i++) {
        char piece[12];
        snprintf(piece, sizeof piece, "%07d", i);
        st__growbuf_put(&b, piece, 7);
        if (b.cap != last_cap) {
            caps++;
            same &= doubling(b.cap) && b.cap >= b.len;
            last_cap = b.cap;
        }
    }
    is_u64(b.len, 5000 * 7, "growth: 5000 appends of 7 bytes");
    ok(same && caps > 5, "growth: capacity doubles from 256 (%zu sizes), always holds the contents", caps);
    for (int i = 0; i < 5000 && same; i++) {
        char piece[12];
        snprintf(piece, sizeof piece, "%07d", i);
        same &= memcmp(b.data + 7 * (size_t)i, piece, 7) == 0;
    }
    ok(same, "growth: every byte kept across reallocations");
    st__growbuf_put(&b, "x", 0);
    is_u64(b.len, 5000 * 7, "put of 0 bytes adds nothing");
    st__growbuf_free(&b);
    ok(b.data == NULL && b.len == 0 && b.cap == 0, "free: empty again");
}

static void test_room_commit_printf(void)
{
    struct st__growbuf b = {0};
    char big[1000];
    uint8_t *at;

    st__growbuf_puts(&b, "ab");
    {
        struct st__growbuf e = {0};
        ok(st__growbuf_room(&e, 0) != NULL && !e.failed, "room for 0 bytes in an empty buffer is not a failure");
        st__growbuf_free(&e);
    }
    at = st__growbuf_room(&b, 600);
    ok(at == b.data + 2 && b.cap - b.len >= 600, "room: a pointer at the end with room for 600 bytes");
    memcpy(at, "cde", 3);
    is_u64(b.len, 2, "room: nothing counted before commit");
    st__growbuf_commit(&b, 3);
    st__growbuf_printf(&b, "[%d:%s]", 42, "z");
    ok(b.len == 11 && memcmp(b.data, "abcde[42:z]", 11) == 0, "commit and printf append in place");
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    st__growbuf_printf(&b, "<%s>", big);
    ok(b.len == 11 + 1001 && b.data[11] == '<' && b.data[12] == 'q' && b.data[11 + 999] == 'q' &&
           b.data[11 + 1000] == '>' && !b.failed,
       "printf: text longer than its stack buffer is formatted in full");
    st__growbuf_free(&b);
}

static void test_failure(void)
{
    struct st__growbuf b = {0};
    uint8_t *data;

    st__growbuf_puts(&b, "kept");
    data = b.data;
    ok(st__growbuf_room(&b, SIZE_MAX - 8) == NULL, "failure: an absurd size gets no room");
    ok(b.failed, "failure: the failed flag is set");
    ok(b.len == 4 && b.data == data && memcmp(b.data, "kept", 4) == 0, "failure: what was there stays");
    ok(st__growbuf_room(&b, 1) == NULL, "failure: sticky, even one byte gets no room");
    st__growbuf_put(&b, "x", 1);
    st__growbuf_puts(&b, "more");
    st__growbuf_printf(&b, "%d", 7);
    is_u64(b.len, 4, "failure: later appends do nothing");
    st__growbuf_free(&b);
    ok(!b.failed && b.data == NULL && b.len == 0, "free: clears the flag");
    st__growbuf_puts(&b, "again");
    ok(!b.failed && b.len == 5 && memcmp(b.data, "again", 5) == 0, "free: the buffer is usable again");
    st__growbuf_free(&b);
}

int main(void)
{
    test_growth();
    test_room_commit_printf();
    test_failure();
    return done_testing();
}
