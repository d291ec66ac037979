/* Which cuBLAS the tools load: the copy the captured application loaded (cli.h, "the
 * application's cuBLAS"). cuBLASLt configurations are not portable across versions, so a row is
 * only worth tuning with the library the application will run it with. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "search/gt_isolate.h"
#ifdef GT_HAVE_CUDA
#include "platform/gt_cudalib.h"
#endif

/* The two libraries, as the capture file's version strings begin, as people call them, and as
 * the DB validators and the loader name them. */
static const struct {
  const char *prefix, *lib, *validator, *env;
} k_libs[GT_CLI_NLIBS] = {
    {"cublaslt=", "cuBLASLt", "cublaslt-lib", "GEMMTUNE_CUBLASLT_LIB"},
    {"cublas=", "cuBLAS", "cublas-lib", "GEMMTUNE_CUBLAS_LIB"},
};

/* One '#gemmtune-capture NAME=VERSION path=PATH' line into libs. */
static void parse_line(const char *line, gt_cli_libs_t *libs) {
  const char *p = line + strlen("#gemmtune-capture ");
  for (int i = 0; i < GT_CLI_NLIBS; i++) {
    if (strncmp(p, k_libs[i].prefix, strlen(k_libs[i].prefix)) != 0) continue;
    const char *sp = strchr(p, ' ');
    const char *path = strstr(p, " path=");
    if (!sp || !path) return;
    gt_cli_lib_t *l = &libs->v[i];
    snprintf(l->version, sizeof l->version, "%.*s", (int)(sp - p), p);
    snprintf(l->path, sizeof l->path, "%s", path + 6);
    l->path[strcspn(l->path, "\r\n")] = '\0';
    return;
  }
}

bool gt_cli_captured_libs(const char *shapes_path, gt_cli_libs_t *libs) {
  memset(libs, 0, sizeof *libs);
  FILE *f = fopen(shapes_path, "r");
  if (!f) return false;
  char line[1400];
  bool any = false;
  while (fgets(line, sizeof line, f)) {
    if (line[0] != '#') continue; /* the lines come first, but a comment may follow anywhere */
    if (strncmp(line, "#gemmtune-capture ", 18) == 0) parse_line(line, libs), any = true;
  }
  fclose(f);
  return any && (libs->v[0].version[0] || libs->v[1].version[0]);
}

/* ---- what this process's workers load --------------------------------------------------------- */

typedef struct loaded_msg {
  gt_cli_libs_t libs;
  char why[400];
} loaded_msg_t;

/* Worker: load cuBLAS as a tune worker would and say which files and versions came. */
static int loaded_worker(gt_isolate_chan_t *ch, void *arg) {
  (void)arg;
  loaded_msg_t m;
  memset(&m, 0, sizeof m);
#ifdef GT_HAVE_CUDA
  const gt_cublas_api_t *api = NULL;
  if (gt_cudalib_load_lt(&api) == GT_OK && api->LtGetVersion) {
    snprintf(m.libs.v[0].version, sizeof m.libs.v[0].version, "cublaslt=%zu", api->LtGetVersion());
    snprintf(m.libs.v[0].path, sizeof m.libs.v[0].path, "%s", api->cublaslt_path);
  } else {
    snprintf(m.why, sizeof m.why, "%s", gt_err_msg());
  }
  if (gt_cudalib_load(&api) == GT_OK && api->GetProperty) {
    int ma = 0, mi = 0, pa = 0;
    if (api->GetProperty(MAJOR_VERSION, &ma) == CUBLAS_STATUS_SUCCESS &&
        api->GetProperty(MINOR_VERSION, &mi) == CUBLAS_STATUS_SUCCESS &&
        api->GetProperty(PATCH_LEVEL, &pa) == CUBLAS_STATUS_SUCCESS)
      snprintf(m.libs.v[1].version, sizeof m.libs.v[1].version, "cublas=%d",
               ma * 10000 + mi * 100 + pa);
    snprintf(m.libs.v[1].path, sizeof m.libs.v[1].path, "%s", api->cublas_path);
  }
#else
  snprintf(m.why, sizeof m.why, "this build has no CUDA support");
#endif
  return gt_isolate_send(ch, &m, sizeof m) == GT_OK ? 0 : 1;
}

static bool on_loaded(void *ctx, const void *msg, size_t len) {
  if (len != sizeof(loaded_msg_t)) return false;
  memcpy(ctx, msg, len);
  return true;
}

void gt_cli_use_captured_libs(const char *cmd, const char *shapes_path, gt_cli_libs_t *used) {
  gt_cli_libs_t cap;
  memset(used, 0, sizeof *used);
  if (!gt_cli_captured_libs(shapes_path, &cap)) return;
  for (int i = 0; i < GT_CLI_NLIBS; i++) {
    const char *set = getenv(k_libs[i].env);
    if (!cap.v[i].path[0] || (set && *set)) continue; /* not captured, or the user chose */
    if (access(cap.v[i].path, R_OK) == 0) setenv(k_libs[i].env, cap.v[i].path, 1);
  }
  /* What the workers will load now, found by a worker: this process never loads CUDA. */
  loaded_msg_t m;
  memset(&m, 0, sizeof m);
  gt_isolate_end_t end;
  if (gt_isolate_run(loaded_worker, NULL, 60, on_loaded, &m, &end) != GT_OK || !end.answered) {
    fprintf(stderr, "gemmtune %s: cannot tell which cuBLAS a worker loads\n", cmd);
    return;
  }
  for (int i = 0; i < GT_CLI_NLIBS; i++) {
    const gt_cli_lib_t *c = &cap.v[i], *l = &m.libs.v[i];
    if (!c->version[0]) continue;
    if (!l->version[0]) {
      fprintf(stderr, "gemmtune %s: warning: the application loaded %s (%s), but this process "
                      "cannot load %s: %s\n", cmd, c->version, c->path, k_libs[i].lib, m.why);
    } else if (strcmp(c->version, l->version) != 0) {
      fprintf(stderr, "gemmtune %s: warning: the application loaded %s (%s), but %s loads %s "
                      "(%s): rows that depend on it will not apply in the application (set %s "
                      "to the application's copy)\n",
              cmd, c->version, c->path, cmd, l->version, l->path, k_libs[i].env);
    } else if (strcmp(c->path, l->path) != 0) {
      fprintf(stderr, "gemmtune %s: the application loaded %s (%s), which is not here; %s loads "
                      "the same version from %s\n", cmd, c->version, c->path, cmd, l->path);
      used->v[i] = *l;
    } else {
      fprintf(stderr, "gemmtune %s: using the %s the application loaded (from the capture): %s "
                      "%s\n", cmd, k_libs[i].lib, l->version, l->path);
      used->v[i] = *l;
    }
  }
}

void gt_cli_set_lib_validators(gt_db_t *db, const gt_cli_libs_t *used) {
  for (int i = 0; i < GT_CLI_NLIBS; i++) {
    if (!used->v[i].version[0]) continue;
    char value[sizeof db->validators[0].value];
    int n = snprintf(value, sizeof value, "%s", used->v[i].path);
    if (n > 0 && (size_t)n < sizeof value && !strpbrk(value, ",\"\r\n"))
      gt_db_set_validator(db, k_libs[i].validator, value);
  }
}

void gt_cli_use_db_libs(const gt_db_t *db) {
  for (int i = 0; i < GT_CLI_NLIBS; i++) {
    const char *path = gt_db_get_validator(db, k_libs[i].validator);
    const char *set = getenv(k_libs[i].env);
    if (path && *path && !(set && *set) && access(path, R_OK) == 0) setenv(k_libs[i].env, path, 1);
  }
}
