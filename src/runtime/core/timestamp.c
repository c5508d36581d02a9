/* The runtime's timestamp mode (timestamp.h). */
#include "timestamp.h"

int st__ts_tsc;

static bool tsc_available;
static struct st__clock_anchor start_anchor; /* ticks with ns, taken at st__ts_init */

void st__ts_init(void)
{
    tsc_available = st__clock_tsc_usable();
    __atomic_store_n(&st__ts_tsc, tsc_available, __ATOMIC_RELAXED);
    start_anchor = st__clock_sample(tsc_available, NULL);
}

bool st__ts_tsc_available(void)
{
    return tsc_available;
}

bool st__ts_is_tsc(void)
{
    return __atomic_load_n(&st__ts_tsc, __ATOMIC_RELAXED) != 0;
}

void st__ts_set_tsc(bool tsc)
{
    __atomic_store_n(&st__ts_tsc, tsc && tsc_available, __ATOMIC_RELAXED);
}

struct st__clock_anchor st__ts_start(void)
{
    return start_anchor;
}

struct st__clock_anchor st__ts_sample(void)
{
    return st__clock_sample(st__ts_is_tsc(), NULL);
}

/* (Re)starts cv from the start-up anchor when it converts the other kind, or nothing yet. */
static void conv_mode(struct st__clock_conv *cv)
{
    bool tsc = st__ts_is_tsc();

    if (cv->nknots == 0 || cv->tsc != tsc)
        st__clock_conv_init(cv, tsc, start_anchor);
}

void st__ts_conv_update(struct st__clock_conv *cv)
{
    conv_mode(cv);
    st__clock_conv_update(cv);
}

void st__ts_conv_update_past(struct st__clock_conv *cv, uint64_t raw)
{
    conv_mode(cv);
    st__clock_conv_update_past(cv, raw);
}
