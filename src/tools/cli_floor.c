/* The lines `tune` and `profile` print about a shape's roofline floor (how close the baseline and
 * the winner come to it) and about the budget the floor gave its search (which rule stopped it). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

void gt_cli_floor_pct(char *buf, size_t cap, double share) {
  if (!(share > 0) || !isfinite(share)) snprintf(buf, cap, "-");
  else snprintf(buf, cap, share >= 0.1 ? "%.0f" : "%.1f", 100 * share);
}

void gt_cli_floor_text(const gt_floor_t *f, double base_us, double best_us, bool improved,
                       char *buf, size_t cap) {
  if (!f || f->us <= 0) {
    snprintf(buf, cap, "floor not known for this device");
    return;
  }
  char b[16], w[16];
  gt_cli_floor_pct(b, sizeof b, gt_floor_share(f, base_us));
  gt_cli_floor_pct(w, sizeof w, gt_floor_share(f, best_us));
  const char *bound = gt_bound_name(f->bound);
  if (improved)
    snprintf(buf, cap, "floor %.4g us: baseline %s%% and winner %s%% of the %s floor", f->us, b, w,
             bound);
  else if (best_us > 0 && best_us != base_us)
    snprintf(buf, cap, "floor %.4g us: baseline %s%% of the %s floor, kept (best other %s%%)",
             f->us, b, bound, w);
  else
    snprintf(buf, cap, "floor %.4g us: baseline %s%% of the %s floor", f->us, b, bound);
}

void gt_cli_search_text(int stop, const char *why, int widenings, size_t n_widened,
                        size_t n_unsearched, char *buf, size_t cap) {
  char done[160];
  switch ((gt_stop_t)stop) {
    case GT_STOP_NONE: snprintf(buf, cap, "search: -"); return;
    case GT_STOP_QUICK:
    case GT_STOP_FULL:
      snprintf(buf, cap, "search: one pass over the %s space", stop == GT_STOP_FULL ? "full"
                                                                                     : "default");
      return;
    case GT_STOP_FLOOR:
      if (widenings == 0) {
        snprintf(buf, cap, "search: quick race only; stopped: floor: %s", why);
        return;
      }
      break;
    default: break;
  }
  char unsearched[48] = "";
  if (n_unsearched) snprintf(unsearched, sizeof unsearched, ", %zu not searched", n_unsearched);
  if (widenings == 0) snprintf(done, sizeof done, "quick pass");
  else
    snprintf(done, sizeof done, "quick pass + %d widening%s (+%zu candidates%s)", widenings,
             widenings == 1 ? "" : "s", n_widened, unsearched);
  snprintf(buf, cap, "search: %s; stopped: %s: %s", done, gt_stop_name((gt_stop_t)stop), why);
}
