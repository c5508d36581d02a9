/*
 * A monitor request line, split into words (monitor_proto.h): pure text
 * handling, no runtime, so it has a fuzz target of its own.
 */
#ifndef ST_RUNTIME_MONITOR_PARSE_H
#define ST_RUNTIME_MONITOR_PARSE_H

#include <stdbool.h>

/* A request: at most 4 words; the last of `trace-file set PATH` is the rest of the line. */
struct st__mon_request {
    char *argv[4];
    int argc;  /* 0: an empty line (a ping); 4: too many words, argv[3] is the first extra one */
    bool json; /* the "json" prefix: answer as one line of JSON */
};

/*
 * Splits line in place (it must stay valid while req is used): a trailing
 * CR is dropped, blanks (space, tab) separate words, a leading "json" word
 * asks for JSON, and PATH of `trace-file set PATH` keeps its inner blanks.
 */
void st__mon_parse_line(char *line, struct st__mon_request *req);

#endif /* ST_RUNTIME_MONITOR_PARSE_H */
