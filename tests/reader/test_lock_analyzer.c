/*
 * The lock_analyzer example against the same model computed here from
 * simpletrace.py's expected text (times rebuilt from the printed deltas),
 * so the binary decoding path is checked against an independent one.
 *
 * usage: test_lock_analyzer LOCK_ANALYZER_EXE SHARED_DIR FIXTURE...
 */
#include "rd_util.h"
#include "tap.h"

#define MAXM 4096
#define MAX_PENDING 64

struct m {
    uint64_t addr, acquired, contended, wait_total, wait_max, hold_total, hold_max;
    bool held;
    int64_t since;
    int64_t pending[MAX_PENDING];
    unsigned npending;
};

static struct m ms[MAXM];
static size_t nm;

static struct m *get(uint64_t addr)
{
    for (size_t i = 0; i < nm; i++)
        if (ms[i].addr == addr)
            return &ms[i];
    if (nm == MAXM)
        return NULL;
    memset(&ms[nm], 0, sizeof ms[nm]);
    ms[nm].addr = addr;
    return &ms[nm++];
}

static void sample(uint64_t *total, uint64_t *max, int64_t from, int64_t to)
{
    uint64_t d = to > from ? (uint64_t)(to - from) : 0;
    *total += d;
    if (d > *max)
        *max = d;
}

/* The model, on the expected text. Returns the number of lock records seen. */
static long model(const char *text)
{
    size_t pos = 0;
    struct rd_line l;
    int64_t t = 0;
    long seen = 0;
    nm = 0;
    while (rd_next_line(text, &pos, &l)) {
        t += l.delta_ns;
        uint64_t addr;
        if (strncmp(l.name, "qemu_mutex_", 11) || !rd_field_u64(&l, "mutex", &addr))
            continue;
        struct m *m = get(addr);
        if (!m)
            continue;
        seen++;
        if (!strcmp(l.name, "qemu_mutex_lock")) {
            m->contended += m->held || m->npending;
            if (m->npending < MAX_PENDING)
                m->pending[m->npending++] = t;
        } else if (!strcmp(l.name, "qemu_mutex_locked")) {
            m->acquired++;
            if (m->npending) {
                sample(&m->wait_total, &m->wait_max, m->pending[0], t);
                memmove(m->pending, m->pending + 1, --m->npending * sizeof m->pending[0]);
            }
            m->held = true;
            m->since = t;
        } else if (!strcmp(l.name, "qemu_mutex_unlock")) {
            if (m->held)
                sample(&m->hold_total, &m->hold_max, m->since, t);
            m->held = false;
        }
    }
    return seen;
}

static void check(const char *exe, const char *shared, const char *name)
{
    char te[4096], bin[4096], exp[4096];
    snprintf(te, sizeof te, "%s/fixtures/qemu/trace-events-all", shared);
    snprintf(bin, sizeof bin, "%s/fixtures/qemu/%s.bin", shared, name);
    snprintf(exp, sizeof exp, "%s/fixtures/qemu/%s.expected.txt", shared, name);
    char *text = tu_slurp(exp, NULL);
    long seen = text ? model(text) : 0;
    char *argv[] = {(char *)exe, te, bin, NULL};
    struct tu_run r;
    rd_run(argv, NULL, &r);
    ok(r.status == 0 && r.out, "%s: lock_analyzer runs (%ld lock records, %zu mutexes)", name, seen, nm);
    size_t rows = 0, matched = 0;
    const char *p = r.out ? strchr(r.out, '\n') : NULL; /* skip the header */
    while (p && p[1] == '0') {
        unsigned long long v[7];
        if (sscanf(p + 1, "%llx %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]) == 7) {
            rows++;
            for (size_t i = 0; i < nm; i++)
                if (ms[i].addr == v[0]) {
                    struct m *m = &ms[i];
                    bool same = m->acquired == v[1] && m->contended == v[2] && m->wait_total == v[3] &&
                                m->wait_max == v[4] && m->hold_total == v[5] && m->hold_max == v[6];
                    matched += same;
                    if (!same)
                        diag("0x%llx: got %llu %llu %llu %llu %llu %llu, model %llu %llu %llu %llu %llu %llu", v[0],
                             v[1], v[2], v[3], v[4], v[5], v[6], (unsigned long long)m->acquired,
                             (unsigned long long)m->contended, (unsigned long long)m->wait_total,
                             (unsigned long long)m->wait_max, (unsigned long long)m->hold_total,
                             (unsigned long long)m->hold_max);
                }
        }
        p = strchr(p + 1, '\n');
    }
    ok(rows == nm && matched == nm && nm > 0, "%s: every mutex row (%zu) equals the model from the expected text",
       name, rows);
    uint64_t acquired = 0;
    for (size_t i = 0; i < nm; i++)
        acquired += ms[i].acquired;
    diag("%s: %llu acquisitions", name, (unsigned long long)acquired);
    tu_run_free(&r);
    free(text);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s LOCK_ANALYZER_EXE SHARED_DIR FIXTURE...\n", argv[0]);
        return 2;
    }
    for (int i = 3; i < argc; i++)
        check(argv[1], argv[2], argv[i]);
    return done_testing();
}
