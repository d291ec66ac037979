/* gemmtune capture: run a command under the preload shim in record mode and write the GEMMs it
 * issued as a shapes file that `gemmtune tune` reads directly. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stdbool.h>
#include <unistd.h>

#include "cli.h"
#include "core/gt_shapes.h"
#include "gt_runtime_paths.h"

static const char k_help[] =
    "Usage: gemmtune capture [-o SHAPES] -- CMD [ARGS...]\n\n"
    "Runs CMD with libgemmtune_preload.so in record mode (LD_PRELOAD, GEMMTUNE_CAPTURE). Every\n"
    "cuBLAS GEMM the process issues (cublasGemmEx, cublasGemmStridedBatchedEx,\n"
    "cublasGemmBatchedEx, cublasGemmGroupedBatchedEx, cublasSgemm/Hgemm and their\n"
    "StridedBatched forms, the _64 variants of all of them, cublasLtMatmul) is keyed exactly as\n"
    "the runtime keys it, counted, and timed (below). At exit the\n"
    "shim writes SHAPES (default gemmtune-shapes.csv): one row per distinct key, sorted by share\n"
    "of GEMM time, which `gemmtune tune` accepts. A GEMM that cannot be tuned (pointer-array or\n"
    "grouped batches, FP8 scaling, device pointer mode, a non-default algo...) has its row too,\n"
    "marked not_tunable with the reason: its time is part of the GEMM time.\n\n"
    "A call made while a CUDA graph is captured runs nothing itself: its kernels run at every\n"
    "replay of the graph. capture also injects the kernel tracer (libgemmtune_trace.so,\n"
    "CUDA_INJECTION64_PATH), the shim notes which graph nodes each captured call added, and\n"
    "such calls count once per replay, with their kernels' time from the trace. Where that is\n"
    "not possible (the tracer is missing, another tool injects into CUDA or holds CUPTI, the\n"
    "application links the CUDA runtime statically...) they count once each, as API calls,\n"
    "and capture says so; the file's '#gemmtune-replays' line says which method counted.\n\n"
    "Calls made outside capture are timed by their own kernels too: the tracer credits every\n"
    "kernel a GEMM call launches to the call's key, so a key's time is what its kernels ran,\n"
    "without the launch gaps an event pair around a call from a host-bound caller (an eager\n"
    "decode step) also measures. Where the tracer cannot say for every call (records dropped,\n"
    "no tracer) the CUDA-event times stand; the '#gemmtune-eager' line says which (timed_by=\n"
    "cupti-kernels or events, with the reason).\n\n"
    "The file also names the cuBLAS and cuBLASLt the process loaded (path and version, '#'\n"
    "lines), so `gemmtune tune` loads the same ones: cuBLASLt rows apply only to the version\n"
    "they were tuned with.\n\n"
    "  -o, --output SHAPES    where to write the shapes file\n"
    "  --lib PATH             the preload library (default: found next to gemmtune, or\n"
    "                         GEMMTUNE_PRELOAD_LIB)\n"
    "  --trace-lib PATH       the kernel tracer that counts graph replays (default: next to\n"
    "                         gemmtune, or GEMMTUNE_TRACE_LIB)\n\n"
    "Examples:\n"
    "  gemmtune capture -o shapes.csv -- python3 serve.py --steps 20\n"
    "  gemmtune capture -- ./my_app && gemmtune tune gemmtune-shapes.csv -o tuned.db\n\n"
    "Exit status: the command's own (a note says when it issued no GEMM, so nothing was\n"
    "written); 64 usage; 69 when the shim could not be found.\n";

enum { C_OUT = 'o', C_HELP = 5000, C_LIB, C_TRACE_LIB };

const char *gt_runtime_find_lib(const char *name, const char *env_override, char *buf, size_t cap) {
  const char *e = env_override ? getenv(env_override) : NULL;
  if (e && *e) return snprintf(buf, cap, "%s", e), buf;
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return NULL;
  exe[n] = '\0';
  char *dir = dirname(exe);
  static const char *const rel[] = {"", "/src/runtime", "/../lib", "/../lib64",
                                    "/../src/runtime", "/lib"};
  for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
    snprintf(buf, cap, "%s%s/%s", dir, rel[i], name);
    if (access(buf, R_OK) == 0) {
      char *real = realpath(buf, NULL);
      if (real) {
        snprintf(buf, cap, "%s", real);
        free(real);
      }
      return buf;
    }
  }
  return NULL;
}

/* The tracer that lets the shim count graph replays, and a fresh folder for its trace files
 * (nothing else reads them). NULL in *tlib, with why, when it cannot be injected. */
static void find_tracer(const char **tlib, char *buf, size_t cap, char *dir, size_t dcap,
                        char *why, size_t wcap) {
  why[0] = dir[0] = '\0';
  if (!*tlib) *tlib = gt_runtime_find_lib("libgemmtune_trace.so", "GEMMTUNE_TRACE_LIB", buf, cap);
  const char *inj = getenv("CUDA_INJECTION64_PATH");
  const char *tmp = getenv("TMPDIR");
  if (!*tlib || access(*tlib, R_OK) != 0) {
    snprintf(why, wcap, "libgemmtune_trace.so was not found (set GEMMTUNE_TRACE_LIB or "
                        "--trace-lib)");
  } else if (inj && *inj) {
    snprintf(why, wcap, "CUDA_INJECTION64_PATH is already set (%.300s): another tool injects "
                        "into CUDA", inj);
  } else if (snprintf(dir, dcap, "%s/gemmtune-capture-XXXXXX", tmp && *tmp ? tmp : "/tmp") >=
                 (int)dcap ||
             !mkdtemp(dir)) {
    snprintf(why, wcap, "cannot create a folder for the kernel trace: %s", strerror(errno));
    dir[0] = '\0';
  } else {
    return;
  }
  *tlib = NULL;
}

/* Remove the tracer's files and folder. */
static void remove_trace_dir(const char *dir) {
  if (!dir[0]) return;
  DIR *d = opendir(dir);
  if (d) {
    for (struct dirent *e; (e = readdir(d));) {
      if (strncmp(e->d_name, "trace.", 6) != 0) continue;
      char p[4400];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      unlink(p);
    }
    closedir(d);
  }
  rmdir(dir);
}

/* The capture file's line starting with prefix ("#gemmtune-replays "), without the prefix; ""
 * when none. */
static void preamble_line(const char *path, const char *prefix, char *out, size_t cap) {
  out[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[1024];
  const size_t pl = strlen(prefix);
  while (fgets(line, sizeof line, f) && line[0] == '#') {
    if (strncmp(line, prefix, pl) != 0) continue;
    line[strcspn(line, "\r\n")] = '\0';
    snprintf(out, cap, "%s", line + pl);
  }
  fclose(f);
}

/* One line on how calls outside graph capture were timed. */
static void say_eager(const char *path) {
  char r[1024];
  preamble_line(path, "#gemmtune-eager ", r, sizeof r);
  if (!r[0]) return;
  if (strncmp(r, "timed_by=cupti-kernels", 22) == 0)
    fprintf(stderr, "gemmtune capture: calls outside graph capture timed by their kernels in the "
                    "trace (%s)\n", r);
  else
    fprintf(stderr, "gemmtune capture: calls outside graph capture timed with CUDA events around "
                    "each call, which include launch gaps (%s)\n", r);
}

/* One line on how calls under graph capture were counted, from the file and what capture knew. */
static void say_replays(const char *path, const char *why_no_tracer) {
  char r[1024];
  preamble_line(path, "#gemmtune-replays ", r, sizeof r);
  if (!r[0] || strstr(r, "captured_calls=0")) return;
  if (strncmp(r, "counted_by=cupti-graph-nodes", 28) == 0)
    fprintf(stderr, "gemmtune capture: graph replays counted through the kernel trace (%s)\n", r);
  else
    fprintf(stderr, "gemmtune capture: graph replays NOT counted: calls made under CUDA graph "
                    "capture count once each, as API calls (%s%s%s)\n",
            r, why_no_tracer[0] ? "; " : "", why_no_tracer);
}

char *gt_runtime_preload_list(const char *shim, const char *rest, char *buf, size_t cap) {
  char bridge[4096];
  snprintf(bridge, sizeof bridge, "%s", shim);
  char *slash = strrchr(bridge, '/');
  size_t at = slash ? (size_t)(slash - bridge + 1) : 0;
  snprintf(bridge + at, sizeof bridge - at, "libgemmtune_torchmm.so");
  /* On wherever it was built (it leaves a process without torch, or with another torch than it
   * was built against, alone); GEMMTUNE_TORCH_BRIDGE=0 leaves it out. */
  const char *opt = getenv("GEMMTUNE_TORCH_BRIDGE");
  const bool have_bridge = !(opt && !strcmp(opt, "0")) && access(bridge, R_OK) == 0;
  snprintf(buf, cap, "%s%s%s%s%s", shim, have_bridge ? ":" : "", have_bridge ? bridge : "",
           rest && *rest ? ":" : "", rest ? rest : "");
  return buf;
}

int gt_cmd_capture(int argc, char **argv) {
  static const struct option opts[] = {{"output", required_argument, 0, C_OUT},
                                       {"lib", required_argument, 0, C_LIB},
                                       {"trace-lib", required_argument, 0, C_TRACE_LIB},
                                       {"help", no_argument, 0, C_HELP},
                                       {0, 0, 0, 0}};
  const char *out = "gemmtune-shapes.csv", *lib = NULL, *tlib = NULL;
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "+ho:", opts, NULL)) != -1) {
    if (c == 'h' || c == C_HELP) return printf("%s", k_help), 0;
    if (c == C_OUT) out = optarg;
    else if (c == C_LIB) lib = optarg;
    else if (c == C_TRACE_LIB) tlib = optarg;
    else return gt_cli_usage_error("capture", "unknown option");
  }
  if (optind >= argc) return gt_cli_usage_error("capture", "expected -- CMD [ARGS...]");
  char libbuf[4096];
  if (!lib) lib = gt_runtime_find_lib("libgemmtune_preload.so", "GEMMTUNE_PRELOAD_LIB", libbuf,
                                      sizeof libbuf);
  if (!lib || access(lib, R_OK) != 0) {
    fprintf(stderr, "gemmtune capture: cannot find libgemmtune_preload.so (built only with CUDA; "
                    "set GEMMTUNE_PRELOAD_LIB or --lib)\n");
    return EX_UNAVAILABLE_;
  }
  char outabs[4096];
  if (out[0] == '/') snprintf(outabs, sizeof outabs, "%s", out);
  else {
    char cwd[2048];
    if (!getcwd(cwd, sizeof cwd)) return EX_IOERR_;
    snprintf(outabs, sizeof outabs, "%s/%s", cwd, out);
  }
  unlink(outabs); /* a stale file must not pass for this run's capture */
  char tlibbuf[4096], tdir[4096], no_tracer[512];
  find_tracer(&tlib, tlibbuf, sizeof tlibbuf, tdir, sizeof tdir, no_tracer, sizeof no_tracer);
  if (tlib)
    gt_cli_env_replaced("capture", "GEMMTUNE_TRACE", NULL,
                        "capture points it at a temporary folder to count graph replays");
  else
    fprintf(stderr, "gemmtune capture: note: the kernel tracer cannot be injected (%s): calls "
                    "made under CUDA graph capture will count once each, not once per replay\n",
            no_tracer);
  gt_cli_env_replaced("capture", "GEMMTUNE_CAPTURE", outabs, "capture sets it to -o");
  gt_cli_preload_check("capture", lib, argv + optind);
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "gemmtune capture: fork: %s\n", strerror(errno));
    remove_trace_dir(tdir);
    return EX_IOERR_;
  }
  if (pid == 0) {
    char pre[8192];
    setenv("LD_PRELOAD", gt_runtime_preload_list(lib, getenv("LD_PRELOAD"), pre, sizeof pre), 1);
    setenv("GEMMTUNE_CAPTURE", outabs, 1);
    if (tlib) {
      char trace[4200];
      snprintf(trace, sizeof trace, "%s/trace.%%p", tdir);
      setenv("CUDA_INJECTION64_PATH", tlib, 1);
      setenv("GEMMTUNE_TRACE", trace, 1);
      setenv("GEMMTUNE_TRACE_CALLS", "1", 1); /* eager calls timed by their kernels */
    }
    execvp(argv[optind], argv + optind);
    fprintf(stderr, "gemmtune capture: cannot run %s: %s\n", argv[optind], strerror(errno));
    _exit(127);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  remove_trace_dir(tdir);
  gt_problem_t defaults;
  gt_problem_init(&defaults);
  gt_shapes_t sh;
  if (access(outabs, R_OK) != 0) {
    fprintf(stderr, "gemmtune capture: the command exited %d and no capture was written to %s "
                    "(it issued no cuBLAS GEMM, or did not load cuBLAS)\n", code, out);
    return code;
  }
  gt_status_t s = gt_shapes_read(outabs, &defaults, &sh, NULL);
  if (s != GT_OK) return gt_cli_fail("capture", s);
  long calls = 0;
  size_t marked = 0;
  for (size_t i = 0; i < sh.n; i++) calls += sh.v[i].calls, marked += sh.v[i].not_tunable[0] != 0;
  fprintf(stderr, "gemmtune capture: %zu distinct GEMM keys (%zu not tunable), %ld calls -> %s "
                  "(command exited %d)\n",
          sh.n, marked, calls, out, code);
  say_replays(outabs, no_tracer);
  say_eager(outabs);
  for (size_t i = 0; i < sh.n && i < 20; i++)
    fprintf(stderr, "  %6.2f%%  %8ld calls  %10.1f us  %s%s%s\n", 100 * sh.v[i].share,
            sh.v[i].calls, sh.v[i].time_us, sh.v[i].view,
            sh.v[i].not_tunable[0] ? "  | not tunable: " : "", sh.v[i].not_tunable);
  gt_shapes_free(&sh);
  return code;
}
