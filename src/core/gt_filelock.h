/* The lock that serialises read-modify-write updates of the files in one directory: the tuned DB
 * (tune's per-shape updates, merge) and the preload shim's capture and stats files, which several
 * processes of one workload may add to at once. flock(2) on the directory itself, so no lock file
 * is left behind, with a bounded wait so a holder that hangs costs the others a clear message
 * rather than their own hang. */
#ifndef GT_FILELOCK_H
#define GT_FILELOCK_H

#include "gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An exclusive lock serialising everyone who replaces a file in the directory of path by reading
 * it, changing it and writing it back (tune and merge on a DB, the shim on capture and stats
 * files): flock(2) on the directory itself, so no lock file is left behind. Waits at most
 * timeout_s seconds, then fails with GT_ERR_IO saying another process holds it. *fd receives the
 * lock (pass it to gt_file_unlock). Locks are per open directory: a process must not take a
 * second lock on a directory it holds. */
gt_status_t gt_file_lock_dir(const char *path, double timeout_s, int *fd);
/* The CLI's wait for that lock: GEMMTUNE_LOCK_TIMEOUT seconds when set to a number > 0, else
 * default_s. */
double gt_file_lock_timeout_s(double default_s);
void gt_file_unlock_dir(int fd);

#ifdef __cplusplus
}
#endif
#endif
