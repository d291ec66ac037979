/* Test fixture for tests/cli/test_preload.sh: turns a captured shapes file into a tuned DB whose
 * every row names a candidate that really runs on this GPU, so the shim's hit path can be tested
 * without depending on which candidate a real tuning run would find faster.
 *
 *   gt_fixture_db SHAPES.csv OUT.csv [--bad-lib-m M] [--prefer PREFIX]
 *
 * For each shape capture did not mark not_tunable: the first active, non-baseline candidate of the cublaslt provider (then the
 * kernels provider); with --prefer, an active own-kernel instance whose name starts with PREFIX
 * first (e.g. gt_sm90_wg_, to put one family through the live path). Times are placeholders (time 1 us, baseline 2 us, timing "fixture") and say
 * nothing about speed. --bad-lib-m M gives rows with m == M a library dependency no process has
 * ("cublaslt=1"), to test that such a row is reported and not used. Prints one line per row:
 *   row <provider> <instance> <key>      or      skip <key>: <reason>
 * Exits 77 when no CUDA device is usable, 1 on errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/gt_db.h"
#include "core/gt_shapes.h"
#include "providers/gt_provider.h"

/* The first active, non-baseline candidate of provider `name` (of its first `max_cands` when
 * > 0) whose name starts with `prefix` (any name when NULL). */
static bool first_active(const char *name, int max_cands, const char *prefix,
                         const gt_problem_t *p, gt_candidate_t *out,
                         const gt_provider_t **prov_out, char *why, size_t cap) {
  const gt_provider_t *prov = gt_provider_find(name);
  if (!prov || gt_provider_ready(prov) != GT_OK) return false;
  gt_cand_list_t list = {0};
  gt_enum_opts_t o = {.max_candidates = max_cands, .exhaustive = false, .device = 0};
  gt_status_t s = prov->enumerate(p, &o, &list);
  bool found = false;
  for (size_t j = 0; s == GT_OK && j < list.n && !found; j++) {
    const gt_candidate_t *c = &list.v[j];
    if (c->excluded || c->is_baseline || (prefix && strncmp(c->name, prefix, strlen(prefix)) != 0))
      continue;
    *out = *c;
    *prov_out = prov;
    found = true;
  }
  if (s != GT_OK) snprintf(why, cap, "%s: %s", name, gt_err_msg());
  gt_cand_list_free(&list);
  return found;
}

/* With prefer: an own instance whose name starts with it; otherwise (or when there is none) the
 * first candidate of cuBLASLt, then of the own kernels. */
static bool pick(const gt_problem_t *p, const char *prefer, gt_candidate_t *out,
                 const gt_provider_t **prov_out, char *why, size_t cap) {
  snprintf(why, cap, "no provider has an active candidate");
  if (prefer && first_active("kernels", 0, prefer, p, out, prov_out, why, cap)) return true;
  static const char *const order[] = {"cublaslt", "kernels"};
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
    if (first_active(order[i], 4, NULL, p, out, prov_out, why, cap)) return true;
  return false;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: gt_fixture_db SHAPES.csv OUT.csv [--bad-lib-m M] [--prefer PREFIX]\n");
    return 1;
  }
  long bad_m = -1;
  const char *prefer = NULL;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--bad-lib-m") == 0) {
      bad_m = atol(argv[i + 1]);
    } else if (strcmp(argv[i], "--prefer") == 0) {
      prefer = argv[i + 1];
    } else {
      fprintf(stderr, "gt_fixture_db: unknown option '%s'\n", argv[i]);
      return 1;
    }
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    printf("no device\n");
    return 77;
  }
  /* Rows record the device they are for, as tune's do: the shim refuses another product's. */
  gt_db_device_t here;
  memset(&here, 0, sizeof here);
  struct cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
    gt_db_device_name(prop.name, here.name, sizeof here.name);
    here.mem_gib = gt_db_mem_gib((uint64_t)prop.totalGlobalMem);
  }
  gt_problem_t defaults;
  gt_problem_init(&defaults);
  gt_shapes_t shapes;
  if (gt_shapes_read(argv[1], &defaults, &shapes, NULL) != GT_OK) {
    fprintf(stderr, "gt_fixture_db: %s\n", gt_err_msg());
    return 1;
  }
  gt_db_t db;
  gt_db_init(&db);
  int rows = 0;
  for (size_t i = 0; i < shapes.n; i++) {
    const gt_problem_t *p = &shapes.v[i].p;
    char key[1024], why[512];
    gt_problem_format_key(p, key, sizeof key);
    if (shapes.v[i].not_tunable[0]) { /* capture marked it: no row may serve it */
      printf("skip %s: not tunable: %s\n", key, shapes.v[i].not_tunable);
      continue;
    }
    gt_candidate_t cand;
    const gt_provider_t *prov = NULL;
    if (!pick(p, prefer, &cand, &prov, why, sizeof why)) {
      printf("skip %s: %s\n", key, why);
      continue;
    }
    gt_db_row_t r;
    memset(&r, 0, sizeof r);
    r.key = *p;
    snprintf(r.provider, sizeof r.provider, "%s", prov->name);
    const char *lib = prov->lib_version ? prov->lib_version() : NULL;
    snprintf(r.lib, sizeof r.lib, "%s", bad_m == p->m ? "cublaslt=1" : lib && *lib ? lib : "-");
    snprintf(r.instance, sizeof r.instance, "%s", cand.name);
    r.time_us = 1.0;
    r.baseline_us = 2.0;
    r.speedup = 2.0;
    r.error = 0.0;
    r.error_bound = 1.0;
    snprintf(r.timing, sizeof r.timing, "fixture");
    r.rounds = 1;
    r.splitk_searched = cand.splitk;
    snprintf(r.baseline, sizeof r.baseline, "fixture");
    gt_db_row_set_device(&r, &here);
    if (gt_db_put(&db, &r) != GT_OK) {
      fprintf(stderr, "gt_fixture_db: %s\n", gt_err_msg());
      return 1;
    }
    printf("row %s %s %s\n", r.provider, r.instance, key);
    rows++;
  }
  if (gt_db_write(&db, argv[2]) != GT_OK) {
    fprintf(stderr, "gt_fixture_db: %s\n", gt_err_msg());
    return 1;
  }
  printf("fixture: %d rows of %zu shapes\n", rows, shapes.n);
  gt_db_free(&db);
  gt_shapes_free(&shapes);
  return 0;
}
