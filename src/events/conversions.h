/*
 * Matching an event's printf conversions against its arguments (private to
 * the events module; the rules are at the top of conversions.c).
 */
#ifndef ST_EVENTS_CONVERSIONS_H
#define ST_EVENTS_CONVERSIONS_H

#include <stddef.h>

#include "events.h"

/*
 * Reads ev->fmt (already validated: string literals and PRI macros) and
 * matches each conversion with the argument it prints, setting every
 * argument's conv. Returns 0, or -EINVAL with a one-line message in msg
 * (without FILE:LINE, which the caller adds). Without a format, every
 * conv is 0 and nothing is checked.
 */
int st__events_match_conversions(struct st__event_decl *ev, char *msg, size_t len);

#endif /* ST_EVENTS_CONVERSIONS_H */
