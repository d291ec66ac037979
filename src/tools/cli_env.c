/* Warnings about gemmtune's environment as the CLI sees it, for the misuse that changes nothing
 * and says nothing: a GEMMTUNE_* name nobody reads (misspelt), a shim variable set where no shim
 * is loaded, and a command that `run`, `capture` or `verify` start with the shim in LD_PRELOAD
 * but that the shim will never reach (a set-user-ID program, a static executable, a launcher that
 * drops the environment, a shim path LD_PRELOAD cannot hold). Warnings only: nothing here changes
 * what runs, and on the normal path (no such variable, an ordinary command) nothing is printed. */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "core/gt_envvars.h"

static void say_unknown(void *ctx, const char *name, const gt_env_var_t *nearest) {
  fprintf(stderr, "gemmtune %s: warning: %s is not a gemmtune variable and is ignored; did you "
                  "mean %s (%s)?\n", (const char *)ctx, name, nearest->name, nearest->what);
}

static int find_shim(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  if (info->dlpi_name && strstr(info->dlpi_name, "libgemmtune_preload")) {
    *(bool *)data = true;
    return 1;
  }
  return 0;
}

bool gt_cli_shim_loaded(void) {
  bool found = false;
  dl_iterate_phdr(find_shim, &found);
  return found;
}

/* Variables only the shim reads (GEMMTUNE_LOG is the dispatch API's too): set in a process
 * without the shim, they do nothing there, nor in anything it starts without the shim. */
static void shim_vars_without_shim(const char *cmd) {
  char set[256] = "";
  size_t n = 0, len = 0;
  for (size_t i = 0; i < gt_env_count(); i++) {
    const gt_env_var_t *v = gt_env_at(i);
    const char *val = getenv(v->name);
    if (v->readers != GT_ENV_SHIM || !val || !*val) continue;
    len += (size_t)snprintf(set + len, len < sizeof set ? sizeof set - len : 0, "%s%s",
                            n++ ? ", " : "", v->name);
  }
  if (!n || gt_cli_shim_loaded()) return;
  const char *pre = getenv("LD_PRELOAD");
  fprintf(stderr, "gemmtune %s: warning: %s %s set, but this process does not have the preload "
                  "shim loaded (%s): only libgemmtune_preload.so inside the application reads "
                  "%s; deploy with 'gemmtune run --db DB -- CMD'\n", cmd, set,
          n == 1 ? "is" : "are",
          pre && strstr(pre, "libgemmtune_preload") ? "LD_PRELOAD names it, but it did not load"
          : pre && *pre                              ? "LD_PRELOAD does not name it"
                                                     : "LD_PRELOAD is not set",
          n == 1 ? "it" : "them");
}

void gt_cli_env_warn(const char *cmd) {
  extern char **environ;
  /* The command run or capture starts has the shim, which says this itself at its first call;
   * verify sends the command's output to a log, so it is said here. */
  if (strcmp(cmd, "run") != 0 && strcmp(cmd, "capture") != 0)
    (void)gt_env_check(environ, say_unknown, (void *)cmd);
  if (strcmp(cmd, "run") != 0 && strcmp(cmd, "capture") != 0 && strcmp(cmd, "verify") != 0)
    shim_vars_without_shim(cmd);
}

void gt_cli_env_replaced(const char *cmd, const char *name, const char *value, const char *how) {
  const char *old = getenv(name);
  if (!old || !*old || (value && strcmp(old, value) == 0)) return;
  fprintf(stderr, "gemmtune %s: note: %s=%s from the environment is not what the command gets: "
                  "%s\n", cmd, name, old, how);
}

/* ---- whether the shim can reach the command --------------------------------------------------- */

/* The file argv0 runs: itself when it holds a '/', else the first executable of that name on
 * PATH. False when there is none (exec then says so itself). */
static bool resolve_command(const char *argv0, char *out, size_t cap) {
  if (strchr(argv0, '/')) return snprintf(out, cap, "%s", argv0) < (int)cap;
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  for (const char *p = path; *p;) {
    size_t l = strcspn(p, ":");
    if (snprintf(out, cap, "%.*s/%s", (int)l, l ? p : ".", argv0) < (int)cap &&
        access(out, X_OK) == 0) {
      struct stat st;
      if (stat(out, &st) == 0 && S_ISREG(st.st_mode)) return true;
    }
    p += l + (p[l] == ':');
  }
  return false;
}

/* What the loader makes of an ELF file: 1 dynamic (it has a PT_INTERP), 0 static, -1 not ELF or
 * unreadable. */
static int elf_dynamic(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  unsigned char h[64];
  int r = -1;
  if (read(fd, h, sizeof h) == (ssize_t)sizeof h && memcmp(h, ELFMAG, SELFMAG) == 0) {
    const bool is64 = h[EI_CLASS] == ELFCLASS64;
    uint64_t phoff;
    uint16_t phentsize, phnum;
    if (is64) {
      const Elf64_Ehdr *e = (const void *)h;
      phoff = e->e_phoff, phentsize = e->e_phentsize, phnum = e->e_phnum;
    } else {
      const Elf32_Ehdr *e = (const void *)h;
      phoff = e->e_phoff, phentsize = e->e_phentsize, phnum = e->e_phnum;
    }
    r = 0;
    for (uint16_t i = 0; i < phnum && i < 256 && r == 0; i++) {
      uint32_t type = 0;
      if (pread(fd, &type, sizeof type, (off_t)(phoff + (uint64_t)i * phentsize)) != sizeof type) {
        r = -1;
        break;
      }
      if (type == PT_INTERP) r = 1;
    }
  }
  close(fd);
  return r;
}

/* Why the loader will not preload anything into the program at path (set-user-ID, static), or
 * NULL. */
static const char *unreachable_program(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return NULL;
  /* Running it changes who we are (a set-user-ID file of another owner): the loader is then in
   * secure-execution mode and ignores an LD_PRELOAD path with a slash in it. */
  if ((st.st_mode & S_ISUID) && st.st_uid != geteuid())
    return "is set-user-ID: the loader ignores LD_PRELOAD for it";
  if ((st.st_mode & S_ISGID) && st.st_gid != getegid())
    return "is set-group-ID: the loader ignores LD_PRELOAD for it";
  if (elf_dynamic(path) == 0) return "is statically linked: no loader runs, so LD_PRELOAD does nothing";
  return NULL;
}

/* The interpreter a script names on its #! line, or false. */
static bool script_interpreter(const char *path, char *out, size_t cap) {
  FILE *f = fopen(path, "re");
  if (!f) return false;
  char line[512];
  bool ok = fgets(line, sizeof line, f) && line[0] == '#' && line[1] == '!';
  fclose(f);
  if (!ok) return false;
  const char *p = line + 2;
  while (*p == ' ' || *p == '\t') p++;
  size_t l = strcspn(p, " \t\r\n");
  return l > 0 && snprintf(out, cap, "%.*s", (int)l, p) < (int)cap;
}

/* Launchers that start their command with an environment of their own, without LD_PRELOAD. */
static const char *dropping_launcher(char *const *argv) {
  const char *b = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
  static const char *const resetting[] = {"sudo", "doas", "su", "pkexec", "runuser"};
  for (size_t i = 0; i < sizeof resetting / sizeof resetting[0]; i++)
    if (strcmp(b, resetting[i]) == 0)
      return "resets the environment of what it starts (LD_PRELOAD and GEMMTUNE_* do not reach "
             "it): run gemmtune inside it instead";
  if (strcmp(b, "ssh") == 0) return "does not pass this environment to the remote command";
  if ((strcmp(b, "docker") == 0 || strcmp(b, "podman") == 0) && argv[1] &&
      (strcmp(argv[1], "run") == 0 || strcmp(argv[1], "exec") == 0))
    return "does not pass this environment into the container (nor the shim's file)";
  if (strcmp(b, "env") == 0)
    for (int i = 1; argv[i] && argv[i][0] == '-'; i++)
      if (strcmp(argv[i], "-i") == 0 || strcmp(argv[i], "--ignore-environment") == 0 ||
          strcmp(argv[i], "-") == 0)
        return "-i starts the command with an empty environment";
  return NULL;
}

void gt_cli_preload_check(const char *cmd, const char *lib, char *const *argv) {
  const char *sep = lib ? strpbrk(lib, ": ") : NULL;
  if (sep)
    fprintf(stderr, "gemmtune %s: warning: the shim's path %s holds a '%c', at which LD_PRELOAD "
                    "splits it: the command will not load the shim (give a path without one, "
                    "--lib)\n", cmd, lib, *sep);
  if (!argv || !argv[0]) return;
  const char *why = dropping_launcher(argv);
  if (why) {
    fprintf(stderr, "gemmtune %s: warning: %s %s, so the shim is not in effect there\n", cmd,
            argv[0], why);
    return;
  }
  char path[4096], interp[512];
  if (!resolve_command(argv[0], path, sizeof path)) return;
  if ((why = unreachable_program(path))) {
    fprintf(stderr, "gemmtune %s: warning: %s %s; the shim is not in effect there\n", cmd, path,
            why);
    return;
  }
  if (script_interpreter(path, interp, sizeof interp) && (why = unreachable_program(interp)))
    fprintf(stderr, "gemmtune %s: warning: %s runs %s, which %s; the shim is not in effect "
                    "there\n", cmd, path, interp, why);
}
