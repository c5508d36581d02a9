/* The subcommands of the `simpletrace` command; each returns the exit status. */
#ifndef ST_CLI_COMMANDS_H
#define ST_CLI_COMMANDS_H

int st__cmd_gen(int argc, char **argv);     /* cmd_gen.c */
int st__cmd_print(int argc, char **argv);   /* cmd_print.c */
int st__cmd_stats(int argc, char **argv);   /* cmd_stats.c */
int st__cmd_ctl(int argc, char **argv);     /* cmd_ctl.c */
int st__cmd_recover(int argc, char **argv); /* cmd_recover.c */
int st__cmd_export(int argc, char **argv);  /* cmd_export.c */
int st__cmd_info(int argc, char **argv);    /* cmd_info.c */
int st__cmd_merge(int argc, char **argv);   /* cmd_merge.c */
int st__cmd_latency(int argc, char **argv); /* cmd_latency.c */
int st__cmd_compare(int argc, char **argv); /* cmd_compare.c */
int st__cmd_sql(int argc, char **argv);     /* cmd_sql.c */

#endif
