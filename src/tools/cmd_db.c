/* gemmtune merge and gemmtune explain: the DB-level commands. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/gt_db.h"
#include "core/gt_filelock.h"

static const char k_merge_help[] =
    "Usage: gemmtune merge A.db B.db [C.db...] -o OUT.db [--prefer first|last]\n\n"
    "Merges tuned DBs left to right (shards of one sweep, or DBs from several runs). Rows for\n"
    "the same key are arbitrated only when they were measured the same way (same timing\n"
    "method): the faster row is kept and the choice is reported. Rows measured differently are\n"
    "not comparable: the merge stops with exit 65, lists both facts, and writes nothing, unless\n"
    "--prefer says which side wins. OUT is written atomically; it may be one of the inputs.\n\n"
    "  -o, --output OUT       the merged DB (required)\n"
    "  --prefer first|last    resolve conflicts in favour of the earlier or later input\n"
    "  -q, --quiet            report conflicts only\n\n";

static const char k_explain_help[] =
    "Usage: gemmtune explain DB (KEY... | PROBLEM)\n\n"
    "Looks each key up in DB exactly as the runtime does. A hit prints the row (provider,\n"
    "instance, times, the gate's error). A miss prints the nearest rows and exactly which key\n"
    "fields differ, e.g. 'n: 2688 vs 2624' or 'sm_count: 132 vs 114'. KEY is the text gemmtune\n"
    "prints for a key (field=value,...; fields not given default as for --key). Instead of KEYs a\n"
    "problem can be given with the usual options (--linear T,OUT,IN ...); arch and sm_count then\n"
    "default to this machine's device unless --arch/--sm-count are given.\n"
    "Exit status: 0 when every key hits, 1 when any misses.\n\n";

typedef struct {
  bool quiet;
} report_ctx_t;

static void report(void *ctx, const char *line) {
  report_ctx_t *r = ctx;
  if (!r->quiet || strstr(line, "conflict")) fprintf(stderr, "%s\n", line);
}

enum { M_OUT = 'o', M_PREFER = 4000, M_HELP, M_QUIET = 'q' };

int gt_cmd_merge(int argc, char **argv) {
  static const struct option opts[] = {{"output", required_argument, 0, M_OUT},
                                       {"prefer", required_argument, 0, M_PREFER},
                                       {"quiet", no_argument, 0, M_QUIET},
                                       {"help", no_argument, 0, M_HELP},
                                       {0, 0, 0, 0}};
  const char *out = NULL;
  int prefer = 0; /* 0 none (strict), 1 first, 2 last */
  report_ctx_t rc = {false};
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "ho:q", opts, NULL)) != -1) {
    if (c == 'h' || c == M_HELP) return printf("%s", k_merge_help), 0;
    if (c == M_OUT) out = optarg;
    else if (c == M_QUIET) rc.quiet = true;
    else if (c == M_PREFER) {
      if (!strcmp(optarg, "first")) prefer = 1;
      else if (!strcmp(optarg, "last")) prefer = 2;
      else return gt_cli_usage_error("merge", "--prefer wants first or last, got '%s'", optarg);
    } else {
      return gt_cli_usage_error("merge", "unknown option");
    }
  }
  if (!out) return gt_cli_usage_error("merge", "-o OUT is required");
  if (argc - optind < 2) return gt_cli_usage_error("merge", "give at least two DBs to merge");
  /* Merges into one OUT (OUT among the inputs: `merge OUT shard.db -o OUT`, from many processes
   * at once) must each see the others' rows: the lock on OUT's directory is held from before
   * the inputs are read until OUT is written, the lock tune's updates take too. */
  int lfd;
  gt_status_t ls = gt_file_lock_dir(out, gt_file_lock_timeout_s(60.0), &lfd);
  if (ls != GT_OK) return gt_cli_fail("merge", ls);
  /* Read every input first: a malformed one stops the merge before anything is written. */
  int n = argc - optind;
  gt_db_t *dbs = calloc((size_t)n, sizeof *dbs);
  if (!dbs) {
    gt_file_unlock_dir(lfd);
    return gt_cli_fail("merge", gt_err_set(GT_ERR_NOMEM, "out of memory"));
  }
  for (int i = 0; i < n; i++) {
    gt_db_init(&dbs[i]);
    gt_status_t s = gt_db_read(argv[optind + i], &dbs[i]);
    if (s != GT_OK) {
      for (int j = 0; j <= i; j++) gt_db_free(&dbs[j]);
      free(dbs);
      gt_file_unlock_dir(lfd);
      return gt_cli_fail("merge", s);
    }
  }
  gt_status_t s = GT_OK;
  for (int i = 1; i < n && s == GT_OK; i++)
    s = gt_db_merge(&dbs[0], &dbs[i], prefer == 0, prefer == 2, report, &rc);
  int code = 0;
  if (s != GT_OK) {
    code = gt_cli_fail("merge", s);
    if (s == GT_ERR_CONFLICT)
      fprintf(stderr, "gemmtune merge: nothing written; --prefer first|last resolves conflicts\n");
  } else if ((s = gt_db_write(&dbs[0], out)) != GT_OK) {
    code = gt_cli_fail("merge", s);
  } else if (!rc.quiet) {
    printf("merged %d DBs into %s (%zu rows)\n", n, out, dbs[0].n);
  }
  gt_file_unlock_dir(lfd);
  for (int i = 0; i < n; i++) gt_db_free(&dbs[i]);
  free(dbs);
  return code;
}

enum { E_HELP = 4100 };

static void print_row(const gt_db_row_t *r) {
  printf("  provider=%s instance=%s lib=%s\n  time %.3f us vs baseline %s %.3f us (%.3fx), "
         "error %.2e (bound %.2e), timed %s, %d rounds, spread %.1f%%%s\n",
         r->provider, r->instance, r->lib, r->time_us, r->baseline, r->baseline_us, r->speedup,
         r->error, r->error_bound, r->timing, r->rounds, r->spread_pct,
         r->throttled ? ", THROTTLED rounds seen" : "");
}

static int explain_one(const gt_db_t *db, const gt_problem_t *k) {
  char key[1024];
  gt_problem_format_key(k, key, sizeof key);
  const gt_db_row_t *row = gt_db_lookup(db, k);
  if (row) {
    printf("HIT  %s\n", key);
    print_row(row);
    return 0;
  }
  printf("MISS %s\n", key);
  gt_db_near_t near[3];
  size_t nn = gt_db_explain(db, k, near, 3);
  if (nn == 0) printf("  the DB has no rows\n");
  for (size_t i = 0; i < nn; i++)
    printf("  nearest #%zu (%d field%s differ): %s  [row: %s/%s]\n", i + 1, near[i].nfields,
           near[i].nfields == 1 ? "" : "s", near[i].diff, near[i].row->provider,
           near[i].row->instance);
  return 1;
}

int gt_cmd_explain(int argc, char **argv) {
  static const struct option own[] = {{"help", no_argument, 0, E_HELP}, {0, 0, 0, 0}};
  struct option *opts = gt_cli_merge_options(own, gt_cli_problem_options, gt_cli_search_options);
  gt_cli_problem_t cp;
  gt_cli_search_t cs;
  gt_cli_problem_init(&cp);
  gt_cli_search_init(&cs);
  int c, rc;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    if (c == 'h' || c == E_HELP) {
      printf("%s%s", k_explain_help, gt_cli_problem_help);
      free(opts);
      return 0;
    }
    if ((rc = gt_cli_problem_opt("explain", &cp, c, optarg)) != 0 ||
        (rc = gt_cli_search_opt("explain", &cs, c, optarg)) != 0) {
      if (rc < 0) return free(opts), EX_USAGE_;
    } else {
      free(opts);
      return gt_cli_usage_error("explain", "unknown option");
    }
  }
  free(opts);
  if (optind >= argc) return gt_cli_usage_error("explain", "expected a DB");
  gt_db_t db;
  gt_db_init(&db);
  gt_status_t s = gt_db_read(argv[optind], &db);
  if (s != GT_OK) return gt_cli_fail("explain", s);
  int misses = 0, keys = 0;
  if (cp.have_shape) {
    if (optind + 1 < argc) {
      gt_db_free(&db);
      return gt_cli_usage_error("explain", "give KEYs or a problem, not both");
    }
    gt_device_info_t dev, *devp = NULL;
    if (!cp.arch_given || !cp.sms_given) {
      cs.quiet = true;
      if (gt_cli_pick_backend("explain", &cs, &dev) == 0) devp = &dev;
    }
    if ((rc = gt_cli_problem_finish("explain", &cp, devp)) != 0) {
      gt_db_free(&db);
      return rc;
    }
    printf("problem: %s\n", cp.mapping);
    misses += explain_one(&db, &cp.p);
    keys++;
  }
  for (int i = optind + 1; i < argc; i++) {
    gt_problem_t k;
    gt_problem_init(&k);
    /* A KEY is data (the text gemmtune prints): a malformed one, or one no GEMM can have (a
     * footprint past 64 bits), is exit 65 naming the key and the field. */
    gt_status_t ks = gt_problem_parse_key(argv[i], &k);
    if (ks == GT_OK) {
      gt_problem_fill_lds(&k);
      ks = gt_problem_validate(&k);
    }
    if (ks != GT_OK) {
      gt_db_free(&db);
      fprintf(stderr, "gemmtune explain: key %d: %s\n", i - optind, gt_err_msg());
      return EX_DATAERR_;
    }
    misses += explain_one(&db, &k);
    keys++;
  }
  gt_db_free(&db);
  if (!keys) return gt_cli_usage_error("explain", "expected KEYs or a problem after the DB");
  return misses ? 1 : 0;
}
