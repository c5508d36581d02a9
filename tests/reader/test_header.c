/* The public reader header compiles alone (no other include before it). */
#include <simpletrace/reader.h>

#include "tap.h"

int main(void)
{
    struct st_reader_options o = {.struct_size = sizeof o};
    struct st_record rec;
    ok(sizeof rec.args / sizeof rec.args[0] == ST_READER_MAX_ARGS && o.flags == 0 && o.struct_size == sizeof o,
       "reader.h stands alone");
    return done_testing();
}
