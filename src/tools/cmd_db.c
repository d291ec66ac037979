/* gemmtune merge and gemmtune explain: the DB-level commands. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "core/gt_calib.h"
#include "core/gt_db.h"
#include "core/gt_filelock.h"

static const char k_merge_help[] =
    "Usage: gemmtune merge INPUT... -o OUT.db [--prefer first|last] [--mixed] [--no-calibration]\n\n"
    "Merges tuned DBs (the shards of one sweep, the DB.shard-I-of-N.db files of tune's shards, or\n"
    "DBs from several runs) into one. An INPUT is a DB or a folder, which stands for every *.db\n"
    "file in it; one input is enough (it is checked and copied), and a shard's empty DB is a\n"
    "valid input. Without --prefer, inputs are merged in the order of their paths, whatever order\n"
    "they are given in, so every ordering writes the same bytes. DBs from different devices or\n"
    "library versions (the #device and #...-lib lines) are refused with both values named, unless\n"
    "--mixed says the mix is meant. Rows for the same key are arbitrated only when they were\n"
    "measured the same way (same timing method, same device): the faster row is kept only when\n"
    "it is faster by more than the two rows' recorded spreads together (spread_pct); closer than\n"
    "that the times do not tell them apart: 'tie within spread', and the row with the lower\n"
    "spread is kept (then the lower time, then the first by name, whichever input it came\n"
    "from). Every choice is reported. Rows measured differently (another timing method, or\n"
    "another product of the same arch and SM count) are not comparable: the merge stops with\n"
    "exit 65, lists both facts, and writes nothing, unless --prefer says which side wins (in the\n"
    "order given). OUT is written atomically; it may be one of the inputs. A DB from before\n"
    "device identities (format 1) is read and written back as format 2. Deploy the one merged DB\n"
    "to every rank of a tensor-parallel job, so that every rank picks the same kernel for the\n"
    "same key (docs/scale-out.md).\n"
    "Calibration: tune times the baseline of the same reference shapes in every shard, before\n"
    "and after its shapes (its #calibration lines). merge compares them across the inputs of\n"
    "one device, the times before the shapes with each other and those after with each other:\n"
    "an input off the others' median by more than the combined spread (at least 2%) is named\n"
    "(a slow or throttled GPU), and where it and another input hold the same key, the other\n"
    "input's row is kept, whichever is faster. A GPU that slowed during its run is said too.\n"
    "Consistent inputs get one summary line; OUT carries no calibration lines.\n\n"
    "  -o, --output OUT       the merged DB (required)\n"
    "  --prefer first|last    resolve conflicts in favour of the earlier or later input, in\n"
    "                         the order given (a folder's files in path order at its place)\n"
    "  --mixed                merge DBs of different devices or library versions\n"
    "  --no-calibration       do not compare the inputs' calibrations (rows are arbitrated\n"
    "                         as if no input were named)\n"
    "  -q, --quiet            report conflicts only\n\n";


static const char k_merge_examples[] =
    "Examples:\n"
    "  gemmtune merge parts -o tuned.db           # every shard DB tune wrote in parts/\n"
    "  gemmtune merge parts/tuned.shard-*-of-8.db -o tuned.db   # the same, named one by one\n"
    "  gemmtune merge tuned.db new.db -o tuned.db --prefer last   # new facts win conflicts\n\n"
    "Exit status: 0; 64 usage; 65 malformed DB, a conflict or DBs of different devices or\n"
    "libraries (nothing written); 66 missing DB or a folder without one; 74 the output cannot\n"
    "be written.\n";

static const char k_explain_help[] =
    "Usage: gemmtune explain DB (KEY... | PROBLEM) [--format F]\n\n"
    "Looks each key up in DB exactly as the runtime does. A hit prints the row (provider,\n"
    "instance, times, the gate's error). A miss prints the nearest rows and exactly which key\n"
    "fields differ, e.g. 'n: 2688 vs 2624' or 'sm_count: 132 vs 114'. KEY is the text gemmtune\n"
    "prints for a key (field=value,...); it may be partial: fields it does not give default as\n"
    "for --key, leading dimensions are tight, and arch and sm_count are the DB's device when all\n"
    "its rows share one, else this machine's (--cpu, --backend or --device: this machine's).\n"
    "Instead of KEYs a problem can be given with the usual options (--linear T,OUT,IN ...);\n"
    "arch and sm_count then default the same way unless --arch/--sm-count are given.\n"
    "A row for this machine's arch and SM count that was tuned on another product (an H100\n"
    "SXM and an H200 share sm_90 and 132 SMs) is refused as the runtime refuses it: 'REFUSED',\n"
    "naming both devices ('rows tuned on NVIDIA H100 80GB HBM3 (79 GiB); this device is NVIDIA\n"
    "H200 (139 GiB): not applied'). Rows of a DB from before device identities apply by what\n"
    "they record, with a note.\n\n"
    "  --format table|csv|json  one line per key: hit or miss, the row or the nearest one\n";

static const char k_explain_examples[] =
    "\nExamples:\n"
    "  gemmtune explain tuned.db --linear 16,4096,4096\n"
    "  gemmtune explain tuned.db 'transa=T,m=4096,n=16,k=4096'     # a partial key\n"
    "  gemmtune explain tuned.db --linear 16,4096,4096 --sm-count 114 --format json\n\n"
    "Exit status: 0 when every key hits, 1 when any misses or is refused; 64 usage or a bad\n"
    "key; 65 malformed DB; 66 missing DB.\n";

typedef struct {
  bool quiet;
} report_ctx_t;

static void report(void *ctx, const char *line) {
  report_ctx_t *r = ctx;
  /* Conflict lines start with the word; a summary's "0 conflicts" is not one. */
  if (!r->quiet || strncmp(line, "conflict", 8) == 0) fprintf(stderr, "%s\n", line);
}

enum { M_OUT = 'o', M_PREFER = 4000, M_HELP, M_MIXED, M_NOCALIB, M_QUIET = 'q' };

/* Calibration lines: one naming an input (a warning) shows even under -q. */
static void report_calib(void *ctx, bool warning, const char *line) {
  report_ctx_t *r = ctx;
  if (warning || !r->quiet) fprintf(stderr, "%s\n", line);
}

/* Compare the inputs' calibrations (core/gt_calib.h) unless off, and apply the verdicts: a named
 * input's rows do not win keys another input holds, and no calibration line reaches OUT. */
static gt_status_t calibration(gt_db_t *dbs, size_t n, bool on, report_ctx_t *rc) {
  gt_calib_verdict_t *v = calloc(n ? n : 1, sizeof *v);
  if (!v) return gt_err_set(GT_ERR_NOMEM, "out of memory");
  if (on) gt_calib_judge(dbs, n, v, report_calib, rc);
  gt_status_t s = gt_calib_yield(dbs, n, v, report_calib, rc);
  free(v);
  return s;
}

typedef struct inputs {
  char **v;
  size_t n, cap;
} inputs_t;

static bool inputs_add(inputs_t *in, const char *path) {
  if (in->n == in->cap) {
    size_t cap = in->cap ? 2 * in->cap : 16;
    char **nv = realloc(in->v, cap * sizeof *nv);
    if (!nv) return false;
    in->v = nv, in->cap = cap;
  }
  return (in->v[in->n] = strdup(path)) ? (in->n++, true) : false;
}

static void inputs_free(inputs_t *in) {
  for (size_t i = 0; i < in->n; i++) free(in->v[i]);
  free(in->v);
}

static int cmp_path(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool inputs_have(const inputs_t *in, size_t upto, const char *path) {
  for (size_t i = 0; i < upto; i++)
    if (strcmp(in->v[i], path) == 0) return true;
  return false;
}

/* The inputs as paths: a folder stands for its *.db files, in path order. Without --prefer
 * (keep_order false) all of them are sorted, so the merge does not depend on the order they
 * were given in; with it the order given is the precedence --prefer first|last names, a
 * folder's files in path order at its place. A path given twice counts once. Returns 0 or the
 * exit code. */
static int collect_inputs(int argc, char **argv, bool keep_order, inputs_t *in) {
  for (int i = optind; i < argc; i++) {
    struct stat st;
    size_t before = in->n;
    if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
      DIR *d = opendir(argv[i]);
      if (!d) return gt_cli_fail("merge", gt_err_set(GT_ERR_IO, "%s: cannot read the folder", argv[i]));
      struct dirent *e;
      while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 3, ".db") != 0 || e->d_name[0] == '.') continue;
        char p[4096];
        snprintf(p, sizeof p, "%s%s%s", argv[i], argv[i][strlen(argv[i]) - 1] == '/' ? "" : "/",
                 e->d_name);
        struct stat fs;
        if (stat(p, &fs) == 0 && S_ISREG(fs.st_mode) && !inputs_add(in, p)) break;
      }
      closedir(d);
      if (in->n == before)
        return gt_cli_fail("merge", gt_err_set(GT_ERR_NOT_FOUND, "%s: a folder with no *.db file",
                                               argv[i]));
      /* readdir's order is the file system's: a folder's files go in path order. */
      qsort(in->v + before, in->n - before, sizeof *in->v, cmp_path);
      continue;
    }
    int rc = gt_cli_need_file("merge", NULL, argv[i]);
    if (rc) return rc;
    if (!inputs_add(in, argv[i])) return gt_cli_fail("merge", gt_err_set(GT_ERR_NOMEM, "out of memory"));
  }
  if (!keep_order) qsort(in->v, in->n, sizeof *in->v, cmp_path);
  size_t w = 0;
  for (size_t i = 0; i < in->n; i++) {
    bool dup = keep_order ? inputs_have(in, w, in->v[i]) : w && strcmp(in->v[w - 1], in->v[i]) == 0;
    if (dup) {
      free(in->v[i]);
      continue;
    }
    in->v[w++] = in->v[i];
  }
  in->n = w;
  return 0;
}

/* Validators that say what the rows were measured on: mixing them is refused unless --mixed. */
static bool identity_validator(const char *name) {
  size_t l = strlen(name);
  return strcmp(name, "device") == 0 || (l > 4 && strcmp(name + l - 4, "-lib") == 0);
}

/* GT_OK when every input was measured on the same device with the same libraries (a validator
 * missing from an input does not count), else GT_ERR_CONFLICT naming the two values. */
static gt_status_t same_identity(gt_db_t *dbs, char **paths, size_t n) {
  for (size_t i = 1; i < n; i++)
    for (size_t v = 0; v < dbs[i].nval; v++) {
      const gt_db_validator_t *x = &dbs[i].validators[v];
      if (!identity_validator(x->name)) continue;
      for (size_t j = 0; j < i; j++) {
        const char *y = gt_db_get_validator(&dbs[j], x->name);
        if (y && strcmp(y, x->value) != 0)
          return gt_err_set(GT_ERR_CONFLICT,
                            "#%s differs: '%s' in %s, '%s' in %s (--mixed merges them anyway)",
                            x->name, y, paths[j], x->value, paths[i]);
      }
    }
  return GT_OK;
}

int gt_cmd_merge(int argc, char **argv) {
  static const struct option opts[] = {{"output", required_argument, 0, M_OUT},
                                       {"prefer", required_argument, 0, M_PREFER},
                                       {"quiet", no_argument, 0, M_QUIET},
                                       {"mixed", no_argument, 0, M_MIXED},
                                       {"no-calibration", no_argument, 0, M_NOCALIB},
                                       {"help", no_argument, 0, M_HELP},
                                       {0, 0, 0, 0}};
  const char *out = NULL;
  bool mixed = false, calib = true;
  int prefer = 0; /* 0 none (strict), 1 first, 2 last */
  report_ctx_t rc = {false};
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "ho:q", opts, NULL)) != -1) {
    if (c == 'h' || c == M_HELP) return printf("%s%s", k_merge_help, k_merge_examples), 0;
    if (c == M_OUT) out = optarg;
    else if (c == M_QUIET) rc.quiet = true;
    else if (c == M_MIXED) mixed = true;
    else if (c == M_NOCALIB) calib = false;
    else if (c == M_PREFER) {
      if (!strcmp(optarg, "first")) prefer = 1;
      else if (!strcmp(optarg, "last")) prefer = 2;
      else return gt_cli_usage_error("merge", "--prefer wants first or last, got '%s'", optarg);
    } else {
      return gt_cli_usage_error("merge", "unknown option");
    }
  }
  if (!out) return gt_cli_usage_error("merge", "-o OUT is required");
  if (argc - optind < 1) return gt_cli_usage_error("merge", "give the DBs (or a folder of them) to merge");
  inputs_t in = {0};
  int crc = collect_inputs(argc, argv, prefer != 0, &in);
  if (crc) return inputs_free(&in), crc;
  /* Merges into one OUT (OUT among the inputs: `merge OUT shard.db -o OUT`, from many processes
   * at once) must each see the others' rows: the lock on OUT's directory is held from before
   * the inputs are read until OUT is written, the lock tune's updates take too. */
  int lfd;
  gt_status_t ls = gt_file_lock_dir(out, gt_file_lock_timeout_s(60.0), &lfd);
  if (ls != GT_OK) return inputs_free(&in), gt_cli_fail("merge", ls);
  /* Read every input first: a malformed one stops the merge before anything is written. */
  int n = (int)in.n;
  gt_db_t *dbs = calloc((size_t)n, sizeof *dbs);
  if (!dbs) {
    gt_file_unlock_dir(lfd);
    inputs_free(&in);
    return gt_cli_fail("merge", gt_err_set(GT_ERR_NOMEM, "out of memory"));
  }
  for (int i = 0; i < n; i++) {
    gt_db_init(&dbs[i]);
    gt_status_t s = gt_db_read(in.v[i], &dbs[i]);
    if (s != GT_OK) {
      for (int j = 0; j <= i; j++) gt_db_free(&dbs[j]);
      free(dbs);
      gt_file_unlock_dir(lfd);
      inputs_free(&in);
      return gt_cli_fail("merge", s);
    }
  }
  gt_status_t s = mixed ? GT_OK : same_identity(dbs, in.v, (size_t)n);
  if (s == GT_OK) s = calibration(dbs, (size_t)n, calib, &rc);
  for (int i = 1; i < n && s == GT_OK; i++)
    s = gt_db_merge(&dbs[0], &dbs[i], prefer == 0, prefer == 2, report, &rc);
  int code = 0;
  if (s != GT_OK) {
    code = gt_cli_fail("merge", s);
    if (s == GT_ERR_CONFLICT)
      fprintf(stderr, "gemmtune merge: nothing written%s\n",
                      strstr(gt_err_msg(), "--mixed") ? "" : "; --prefer first|last resolves conflicts");
  } else if ((s = gt_db_write(&dbs[0], out)) != GT_OK) {
    code = gt_cli_fail("merge", s);
  } else if (!rc.quiet) {
    printf("merged %d DBs into %s (%zu rows)\n", n, out, dbs[0].n);
  }
  gt_file_unlock_dir(lfd);
  for (int i = 0; i < n; i++) gt_db_free(&dbs[i]);
  free(dbs);
  inputs_free(&in);
  return code;
}

enum { E_HELP = 4100, E_FORMAT };
#define EXPLAIN_OPTS (GT_OPT_PROBLEM | GT_OPT_DEVICE)

/* Where explain's lines go: a table for people, or rows of the csv/json writer. */
typedef struct explain_out {
  gt_fmt_t fmt;
  gt_table_t t;
} explain_out_t;

static void print_row(const gt_db_row_t *r) {
  printf("  provider=%s instance=%s lib=%s\n  time %.3f us vs baseline %s %.3f us (%.3fx), "
         "error %.2e (bound %.2e), timed %s, %d rounds, spread %.1f%%%s\n",
         r->provider, r->instance, r->lib, r->time_us, r->baseline, r->baseline_us, r->speedup,
         r->error, r->error_bound, r->timing, r->rounds, r->spread_pct,
         r->throttled ? ", THROTTLED rounds seen" : "");
  if (r->live == GT_LIVE_CONFIRMED)
    printf("  confirmed live: %.3f us served by the runtime vs %.3f us through the entry point "
           "(%.3fx)\n", r->live_us, r->live_baseline_us, r->live_speedup);
  else
    printf("  live confirmation: %s\n",
           r->live == GT_LIVE_OFF       ? "off when tuned (--no-live-confirm)"
           : r->live == GT_LIVE_SKIPPED ? "skipped when tuned (it could not run there)"
                                        : "not recorded (a row from before live confirmation)");
}

/* Look k up as the runtime does on the device here: a hit on a row tuned on another product of
 * the same arch and SM count is refused. Returns 1 for a miss or a refusal. */
static int explain_one(explain_out_t *eo, const gt_db_t *db, const gt_problem_t *k,
                       const gt_db_device_t *here) {
  char key[1024], refusal[512] = "";
  gt_problem_format_key(k, key, sizeof key);
  const gt_db_row_t *row = gt_db_lookup(db, k);
  if (row && gt_db_row_fit(row, here) == GT_DB_FIT_OTHER)
    gt_db_refusal_str(row, here, refusal, sizeof refusal);
  gt_db_near_t near[3];
  size_t nn = row ? 0 : gt_db_explain(db, k, near, 3);
  if (eo->fmt != GT_FMT_TABLE) {
    const gt_db_row_t *r = row ? row : nn ? near[0].row : NULL;
    char t[32] = "", b[32] = "", sp[32] = "";
    if (r) {
      snprintf(t, sizeof t, "%.3f", r->time_us);
      snprintf(b, sizeof b, "%.3f", r->baseline_us);
      snprintf(sp, sizeof sp, "%.4g", r->speedup);
    }
    const char *cells[] = {refusal[0] ? "refused" : row ? "hit" : "miss", key,
                           r ? r->provider : "", r ? r->instance : "", t, b, sp,
                           refusal[0] ? refusal : row ? "" : nn ? near[0].diff : "the DB has no rows"};
    gt_table_row(&eo->t, cells);
    return row && !refusal[0] ? 0 : 1;
  }
  if (row) {
    printf("%s %s\n", refusal[0] ? "REFUSED" : "HIT ", key);
    if (refusal[0]) printf("  %s\n", refusal);
    print_row(row);
    return refusal[0] ? 1 : 0;
  }
  printf("MISS %s\n", key);
  if (nn == 0) printf("  the DB has no rows\n");
  for (size_t i = 0; i < nn; i++)
    printf("  nearest #%zu (%d field%s differ): %s  [row: %s/%s]\n", i + 1, near[i].nfields,
           near[i].nfields == 1 ? "" : "s", near[i].diff, near[i].row->provider,
           near[i].row->instance);
  return 1;
}

/* The device every row of db names, when they agree: a key that leaves arch and sm_count out
 * means "on the device this DB is for". False for an empty DB or rows of several devices. */
static bool db_device(const gt_db_t *db, char *arch, size_t cap, int *sms) {
  if (db->n == 0) return false;
  for (size_t i = 1; i < db->n; i++)
    if (strcmp(db->rows[i].key.arch, db->rows[0].key.arch) ||
        db->rows[i].key.sm_count != db->rows[0].key.sm_count)
      return false;
  snprintf(arch, cap, "%s", db->rows[0].key.arch);
  *sms = db->rows[0].key.sm_count;
  return true;
}

/* Fill the device fields a key or problem left out: this machine's device (here) when one was
 * named (--cpu, --backend, --device), else the DB's when its rows share one, else this
 * machine's. */
static void default_device(const gt_db_t *db, const gt_cli_search_t *cs,
                           const gt_db_device_t *here, gt_problem_t *p, bool arch_given,
                           bool sms_given) {
  if (arch_given && sms_given) return;
  char arch[sizeof p->arch];
  int sms = 0;
  bool machine = strcmp(cs->backend_name, "auto") != 0 || cs->gpu_asked; /* --cpu, --device */
  if (machine || !db_device(db, arch, sizeof arch, &sms)) {
    if (!here->arch[0]) return; /* the device could not be detected (said) */
    snprintf(arch, sizeof arch, "%s", here->arch);
    sms = here->sm_count;
  }
  if (!arch_given) snprintf(p->arch, sizeof p->arch, "%s", arch);
  if (!sms_given) p->sm_count = sms;
}

/* Parse the command line; -1 to go on, else the exit status. */
static int explain_args(int argc, char **argv, gt_cli_problem_t *cp, gt_cli_search_t *cs,
                        gt_fmt_t *fmt) {
  static const struct option own[] = {{"format", required_argument, 0, E_FORMAT},
                                      {"help", no_argument, 0, E_HELP},
                                      {0, 0, 0, 0}};
  struct option *opts = gt_cli_options(own, EXPLAIN_OPTS, NULL);
  int c, rc;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    if (c == 'h' || c == E_HELP) {
      printf("%s", k_explain_help);
      gt_cli_options_help(stdout, EXPLAIN_OPTS, NULL);
      printf("%s", k_explain_examples);
      free(opts);
      return 0;
    }
    if (c == E_FORMAT) {
      if (gt_cli_parse_format("explain", optarg, fmt)) return free(opts), EX_USAGE_;
    } else if ((rc = gt_cli_problem_opt("explain", cp, c, optarg)) != 0 ||
               (rc = gt_cli_search_opt("explain", cs, c, optarg)) != 0) {
      if (rc < 0) return free(opts), EX_USAGE_;
    } else {
      free(opts);
      return gt_cli_usage_error("explain", "unknown option");
    }
  }
  free(opts);
  if (optind >= argc) return gt_cli_usage_error("explain", "expected a DB");
  if (cp->have_shape && optind + 1 < argc)
    return gt_cli_usage_error("explain", "give KEYs or a problem, not both");
  if (!cp->have_shape && optind + 1 >= argc)
    return gt_cli_usage_error("explain", "expected KEYs or a problem after the DB");
  /* Keys are parsed before the DB is read: a bad key is a usage error whatever the DB holds. */
  for (int i = optind + 1; i < argc; i++) {
    gt_problem_t k;
    gt_problem_init(&k);
    if (gt_problem_parse_key(argv[i], &k) != GT_OK)
      return gt_cli_usage_error("explain", "key %d: %s", i - optind, gt_err_msg());
  }
  return -1;
}

int gt_cmd_explain(int argc, char **argv) {
  gt_cli_problem_t cp;
  gt_cli_search_t cs;
  gt_cli_problem_init(&cp);
  gt_cli_search_init(&cs);
  explain_out_t eo = {.fmt = GT_FMT_TABLE};
  int rc = explain_args(argc, argv, &cp, &cs, &eo.fmt);
  if (rc >= 0) return rc;
  if ((rc = gt_cli_need_file("explain", NULL, argv[optind])) != 0) return rc;
  gt_db_t db;
  gt_db_init(&db);
  gt_status_t s = gt_db_read(argv[optind], &db);
  if (s != GT_OK) return gt_cli_fail("explain", s);
  /* This machine's device: rows of another product are refused here, as the runtime would. */
  gt_db_device_t here;
  memset(&here, 0, sizeof here);
  if (gt_cli_device_here("explain", &cs, &here) == 0) gt_cli_note_db_device("explain", &db, &here);
  static const char *const names[] = {"result", "key", "provider", "instance", "time_us",
                                      "baseline_us", "speedup", "differs"};
  static const bool num[] = {0, 0, 0, 0, 1, 1, 1, 0};
  if (eo.fmt != GT_FMT_TABLE) gt_table_begin(&eo.t, stdout, eo.fmt, 8, names, num);
  int misses = 0;
  if (cp.have_shape) {
    default_device(&db, &cs, &here, &cp.p, cp.arch_given, cp.sms_given);
    cp.arch_given = cp.sms_given = true; /* filled: finish must not take the machine's */
    if ((rc = gt_cli_problem_finish("explain", &cp, NULL)) != 0) {
      gt_db_free(&db);
      return rc;
    }
    if (eo.fmt == GT_FMT_TABLE) printf("problem: %s\n", cp.mapping);
    misses += explain_one(&eo, &db, &cp.p, &here);
  }
  for (int i = optind + 1; i < argc; i++) {
    gt_problem_t k;
    gt_problem_init(&k);
    gt_problem_parse_key(argv[i], &k); /* checked by explain_args */
    default_device(&db, &cs, &here, &k, strstr(argv[i], "arch=") != NULL,
                   strstr(argv[i], "sm_count=") != NULL);
    gt_problem_fill_lds(&k);
    /* A KEY is data: one no GEMM can have (a footprint past 64 bits) is exit 65 naming the key
     * and the field. */
    if (gt_problem_validate(&k) != GT_OK) {
      if (eo.fmt != GT_FMT_TABLE) gt_table_end(&eo.t);
      gt_db_free(&db);
      fprintf(stderr, "gemmtune explain: key %d: %s\n", i - optind, gt_err_msg());
      return EX_DATAERR_;
    }
    misses += explain_one(&eo, &db, &k, &here);
  }
  if (eo.fmt != GT_FMT_TABLE) gt_table_end(&eo.t);
  gt_db_free(&db);
  return misses ? 1 : 0;
}
