/* The roofline floor (core/gt_roofline.h): a table of problems on the H200's datasheet roof with
 * the floor, the bound and the rate class each must get (decode shapes bandwidth-bound, large
 * square ones compute-bound, fp8 at twice bf16, f32 on the FMA rate unless tf32); an unknown roof
 * gives no floor; shares; the datasheets found by name and SM count; the shard cost on the same
 * model. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/gt_roofline.h"
#include "core/gt_shard.h"

typedef struct floor_case {
  const char *name;
  int64_t tokens, out, in;
  gt_dtype_t dt;
  gt_compute_t compute;
  gt_bound_t bound;
  gt_rate_t rate;
  double us; /* expected floor, 0.1% */
} floor_case_t;

/* H200: 4800 GB/s; dense 989.4 bf16, 1978.9 fp8, 494.7 tf32, 66.9 f32 TFLOP/s. */
static const floor_case_t k_floors[] = {
    /* 1x4096x4096 bf16: 2 x 4096 x 4096 B weight + 8 KB + 8 KB vectors = 33.57 MB -> 6.99 us. */
    {"decode_bf16_bandwidth", 1, 4096, 4096, GT_DT_BF16, GT_COMPUTE_F32, GT_BOUND_BANDWIDTH,
     GT_RATE_TC16, (2.0 * 4096 * 4096 + 2 * 4096 + 2 * 4096) / 4800e9 * 1e6},
    /* 8192^3 bf16: 2 x 8192^3 FLOP at 989.4 TFLOP/s -> 1111 us. */
    {"square_bf16_compute", 8192, 8192, 8192, GT_DT_BF16, GT_COMPUTE_F32, GT_BOUND_COMPUTE,
     GT_RATE_TC16, 2.0 * 8192 * 8192 * 8192 / 989.4e12 * 1e6},
    {"square_fp8_twice_bf16", 8192, 8192, 8192, GT_DT_F8E4M3FN, GT_COMPUTE_F32, GT_BOUND_COMPUTE,
     GT_RATE_TC8, 2.0 * 8192 * 8192 * 8192 / 1978.9e12 * 1e6},
    {"square_f32_fma", 4096, 4096, 4096, GT_DT_F32, GT_COMPUTE_F32, GT_BOUND_COMPUTE, GT_RATE_F32,
     2.0 * 4096 * 4096 * 4096 / 66.9e12 * 1e6},
    {"square_tf32", 4096, 4096, 4096, GT_DT_F32, GT_COMPUTE_TF32, GT_BOUND_COMPUTE, GT_RATE_TF32,
     2.0 * 4096 * 4096 * 4096 / 494.7e12 * 1e6},
};

static void test_floor(void **state) {
  const floor_case_t *c = *state;
  gt_roof_t roof;
  assert_true(gt_roof_datasheet("NVIDIA H200", 132, &roof));
  gt_problem_t p;
  gt_problem_init(&p);
  p.a_type = p.b_type = p.c_type = p.d_type = c->dt;
  if (c->dt == GT_DT_F8E4M3FN) p.c_type = p.d_type = GT_DT_BF16;
  p.compute = c->compute;
  gt_problem_set_linear(&p, c->tokens, c->out, c->in);
  gt_floor_t f;
  assert_true(gt_roof_floor(&roof, &p, &f));
  if (fabs(f.us - c->us) > 1e-3 * c->us) print_error("%s: floor %.6g us, want %.6g\n", c->name, f.us, c->us);
  assert_true(fabs(f.us - c->us) <= 1e-3 * c->us);
  assert_int_equal(f.bound, c->bound);
  assert_int_equal(f.rate, c->rate);
  assert_true(f.tflops == roof.tflops[c->rate] && f.gbps == roof.gbps);
  /* A time twice the floor reaches half of it. */
  assert_true(fabs(gt_floor_share(&f, 2 * f.us) - 0.5) < 1e-12);
}

static void test_unknown_roof_has_no_floor(void **state) {
  gt_roof_t zero;
  memset(&zero, 0, sizeof zero);
  gt_problem_t p;
  gt_problem_init(&p);
  gt_problem_set_linear(&p, 16, 4096, 4096);
  gt_floor_t f;
  assert_false(gt_roof_floor(&zero, &p, &f));
  assert_true(f.us == 0);
  assert_int_equal(f.bound, GT_BOUND_NONE);
  assert_true(gt_floor_share(&f, 10.0) == 0);
  assert_false(gt_roof_floor(NULL, &p, &f));
  assert_true(f.flops > 0 && f.bytes > 0); /* the work is known even without a roof */
}

static void test_datasheets(void **state) {
  gt_roof_t r;
  assert_true(gt_roof_datasheet("NVIDIA H100 80GB HBM3", 132, &r));
  assert_true(r.gbps == 3350 && fabs(r.tflops[GT_RATE_TC8] - 2 * r.tflops[GT_RATE_TC16]) < 0.2);
  assert_true(gt_roof_datasheet("NVIDIA H100 PCIe", 114, &r));
  assert_true(r.gbps == 2000);
  assert_true(gt_roof_datasheet("NVIDIA H200", 132, &r));
  assert_non_null(strstr(r.source, "H200 datasheet"));
  assert_false(gt_roof_datasheet("NVIDIA H100 something", 100, &r));
  assert_false(gt_roof_datasheet("NVIDIA GeForce RTX 4090", 128, &r));
  assert_false(gt_roof_datasheet(NULL, 132, &r));
}

static void test_names_and_uniform(void **state) {
  for (int b = GT_BOUND_NONE; b <= GT_BOUND_COMPUTE; b++) {
    gt_bound_t back;
    assert_true(gt_bound_parse(gt_bound_name((gt_bound_t)b), &back));
    assert_int_equal(back, b);
  }
  gt_bound_t x;
  assert_false(gt_bound_parse("memory", &x));
  assert_string_equal(gt_bound_name(GT_BOUND_BANDWIDTH), "bandwidth");
  gt_roof_t u;
  gt_roof_uniform(&u, 0.16, 20, "host estimate");
  for (int k = 0; k < GT_RATE__COUNT; k++) assert_true(u.tflops[k] == 0.16);
  assert_string_equal(u.source, "host estimate");
}

/* The shard plan's cost is 1 + floor / 2 ms on the same model. */
static void test_shard_cost_uses_the_floor(void **state) {
  gt_problem_t p;
  gt_problem_init(&p);
  gt_problem_set_linear(&p, 4096, 4096, 4096);
  gt_floor_t f;
  gt_roof_floor_at(gt_problem_flops(&p), gt_problem_min_bytes(&p), 989.4, 4800, &f);
  assert_true(fabs(gt_shard_cost(&p, 989.4, 4800) - (1 + f.us * 1e-6 / 2e-3)) < 1e-12);
  assert_true(gt_shard_cost(&p, 0, 4800) == 1.0);
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

int main(void) {
  struct CMUnitTest t[NELEM(k_floors) + 4];
  size_t n = 0;
  for (size_t i = 0; i < NELEM(k_floors); i++)
    t[n++] = (struct CMUnitTest){k_floors[i].name, test_floor, NULL, NULL, (void *)&k_floors[i]};
  t[n++] = (struct CMUnitTest){"unknown_roof_has_no_floor", test_unknown_roof_has_no_floor, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"datasheets", test_datasheets, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"names_and_uniform", test_names_and_uniform, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"shard_cost_uses_the_floor", test_shard_cost_uses_the_floor, NULL, NULL, NULL};
  return _cmocka_run_group_tests("roofline", t, n, NULL, NULL);
}
