/* The runtime's timestamp mode (timestamp.h). */
#include "timestamp.h"

int st__ts_tsc;

static bool tsc_available, tsc_forcible;
static uint64_t counter_hz;
static struct st__clock_anchor start_anchor; /* taken at st__ts_init (or when first forced to the counter) */
static bool start_tsc;                       /* its raw is counter ticks */

void st__ts_init(void)
{
    tsc_available = st__clock_counter_usable();
    tsc_forcible = tsc_available || st__clock_counter_forcible();
    counter_hz = st__clock_counter_hz();
    __atomic_store_n(&st__ts_tsc, tsc_available, __ATOMIC_RELAXED);
    start_anchor = st__clock_sample(tsc_available, NULL);
    start_tsc = tsc_available;
}

bool st__ts_tsc_available(void)
{
    return tsc_available;
}

bool st__ts_tsc_forcible(void)
{
    return tsc_forcible;
}

uint64_t st__ts_counter_hz(void)
{
    return counter_hz;
}

bool st__ts_is_tsc(void)
{
    return __atomic_load_n(&st__ts_tsc, __ATOMIC_RELAXED) != 0;
}

void st__ts_set_tsc(bool tsc)
{
    tsc = tsc && tsc_forcible;
    /* Counter ticks need an anchor in ticks: a counter forced on (not available at start-up) takes its own. */
    if (tsc && !start_tsc) {
        start_anchor = st__clock_sample(true, NULL);
        start_tsc = true;
    }
    __atomic_store_n(&st__ts_tsc, tsc, __ATOMIC_RELAXED);
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
