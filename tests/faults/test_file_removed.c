/*
 * The trace file deleted, renamed or replaced while the runtime has it open.
 *
 * What the runtime does (decided and documented in src/runtime/drain/tracefile.c): it keeps
 * writing to the file it opened, whatever its name is now. Deleted: the
 * records go to the unlinked inode, which disappears when the file is
 * closed (they count as written: they were). Renamed: the file under its
 * new name gets everything. Replaced (another file renamed over the path):
 * the old inode gets the records, the new file is untouched. Turning the
 * file off and on again, or `trace-file set PATH` (st_trace_file_set_name),
 * opens the path anew: a new file there starts with a header and every
 * mapping. Nothing is lost and nothing is written twice.
 *
 * To read a deleted file the test holds a descriptor of its own and decodes
 * it through /proc/self/fd.
 */
#include "fault_test.h"

static uint64_t produced, seq;

static void trace_n(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        ft_trace(0, seq++, &produced);
}

int main(void)
{
    struct st_file_status fs = {.struct_size = sizeof fs};
    struct ft_sum s;
    char cfg[1400], held[64], *text;
    int hold;

    test_tmpdir();
    ft_sum_init(&s);

    /* Deleted while open. */
    snprintf(cfg, sizeof cfg, "ft_*,file=%s", test_path("a.trace"));
    is_int(st_configure(cfg, NULL, 0), 0, "configure a.trace");
    trace_n(1000);
    is_int(st_trace_file_flush(), 0, "flush");
    hold = open(test_path("a.trace"), O_RDONLY);
    ok(hold >= 0 && unlink(test_path("a.trace")) == 0, "a.trace deleted while open");
    trace_n(1000);
    is_int(st_trace_file_flush(), 0, "flush still succeeds (the unlinked inode is written)");
    st_trace_file_status(&fs);
    ok(fs.enabled && fs.error == 0, "status: on, no error");
    is_int(st_trace_file_set_name(test_path("b.trace")), 0, "trace-file set b.trace");
    trace_n(1000);
    is_int(st_trace_file_flush(), 0, "flush b.trace");
    snprintf(held, sizeof held, "/proc/self/fd/%d", hold);
    ft_sum_file(&s, held, 0);
    ok(s.decoded && s.events == 2000, "the deleted file holds the 2000 records written to it");
    close(hold);
    ok(!test_exists(test_path("a.trace")), "a.trace was not recreated");

    /* Renamed while open. */
    trace_n(500);
    ok(rename(test_path("b.trace"), test_path("b.moved")) == 0, "b.trace renamed to b.moved while open");
    trace_n(500);
    is_int(st_trace_file_flush(), 0, "flush");
    ok(!test_exists(test_path("b.trace")), "nothing written under the old name");
    is_int(st_trace_file_set_enabled(false), 0, "off");
    is_int(st_trace_file_set_enabled(true), 0, "on again: opens b.trace anew");
    trace_n(500);
    is_int(st_trace_file_flush(), 0, "flush");
    ft_sum_file(&s, test_path("b.moved"), 0);

    /* Replaced while open: another file renamed over the path (the new b.trace is read at the end). */
    test_write_file(test_path("foreign"), "not a trace\n");
    hold = open(test_path("b.trace"), O_RDONLY);
    ok(rename(test_path("foreign"), test_path("b.trace")) == 0, "b.trace replaced by another file while open");
    trace_n(700);
    is_int(st_trace_file_flush(), 0, "flush");
    text = tu_slurp(test_path("b.trace"), NULL);
    ok(text && !strcmp(text, "not a trace\n"), "the replacement is untouched");
    free(text);
    is_int(st_trace_file_set_name(test_path("c.trace")), 0, "trace-file set c.trace");
    trace_n(300);
    st_trace_file_set_enabled(false);
    snprintf(held, sizeof held, "/proc/self/fd/%d", hold);
    ft_sum_file(&s, held, 0); /* the replaced b.trace */
    close(hold);
    ft_sum_file(&s, test_path("c.trace"), 0);
    ft_check("removed", &s, produced);
    ok(s.last_seq[0] == seq, "the last record traced is in the last file");
    return done_testing();
}
