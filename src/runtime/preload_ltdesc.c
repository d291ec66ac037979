/* Reading a cublasLtMatmul call's opaque descriptors (the matmul descriptor and four matrix
 * layouts) through cuBLASLt's own getters, into the plain structs gt_cublas_key_lt_matmul takes.
 * This is all the shim learns about such a call before deciding whether it understands it, so it
 * touches nothing CUDA (the call's stream included). */
#include <string.h>

#include "preload_internal.h"

/* Descriptor attributes. A core attribute that cannot be read makes the call unsupported; an
 * optional one that the library does not know cannot have been set, so it is at its default. */
static bool lt_get(const gt_preload_api_t *a, cublasLtMatmulDesc_t d, int attr, void *buf,
                   size_t size) {
  size_t w = 0;
  return a->LtDescGet(d, (cublasLtMatmulDescAttributes_t)attr, buf, size, &w) ==
             CUBLAS_STATUS_SUCCESS &&
         w == size;
}

/* The FP8 scaling attributes (scale and amax pointers, scale modes): optional, read in the
 * order the key builder's arrays list them. */
static void lt_read_scales(const gt_preload_api_t *a, cublasLtMatmulDesc_t d,
                           gt_cublaslt_desc_t *o) {
  static const int ptr_attrs[8] = {GT_CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                   GT_CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                   GT_CUBLASLT_MATMUL_DESC_C_SCALE_POINTER,
                                   GT_CUBLASLT_MATMUL_DESC_D_SCALE_POINTER,
                                   GT_CUBLASLT_MATMUL_DESC_AMAX_D_POINTER,
                                   GT_CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER,
                                   GT_CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER,
                                   GT_CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER};
  for (int i = 0; i < 8; i++)
    (void)lt_get(a, d, ptr_attrs[i], (void *)&o->scale_ptr[i], sizeof(void *));
  static const int mode_attrs[6] = {
      GT_CUBLASLT_MATMUL_DESC_A_SCALE_MODE, GT_CUBLASLT_MATMUL_DESC_B_SCALE_MODE,
      GT_CUBLASLT_MATMUL_DESC_C_SCALE_MODE, GT_CUBLASLT_MATMUL_DESC_D_SCALE_MODE,
      GT_CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE, GT_CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE};
  for (int i = 0; i < 6; i++) (void)lt_get(a, d, mode_attrs[i], &o->scale_mode[i], 4);
}

static void lt_read_desc(const gt_preload_api_t *a, cublasLtMatmulDesc_t d,
                         gt_cublaslt_desc_t *o) {
  memset(o, 0, sizeof *o);
  o->bias_data_type = -1;
  o->fill_mode = GT_CUBLAS_FILL_MODE_FULL;
  if (!a->LtDescGet) return;
  o->ok = lt_get(a, d, GT_CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &o->compute_type, 4) &&
          lt_get(a, d, GT_CUBLASLT_MATMUL_DESC_SCALE_TYPE, &o->scale_type, 4) &&
          lt_get(a, d, GT_CUBLASLT_MATMUL_DESC_POINTER_MODE, &o->pointer_mode, 4) &&
          lt_get(a, d, GT_CUBLASLT_MATMUL_DESC_TRANSA, &o->transa, 4) &&
          lt_get(a, d, GT_CUBLASLT_MATMUL_DESC_TRANSB, &o->transb, 4) &&
          lt_get(a, d, GT_CUBLASLT_MATMUL_DESC_TRANSC, &o->transc, 4) &&
          lt_get(a, d, GT_CUBLASLT_MATMUL_DESC_EPILOGUE, &o->epilogue, 4) &&
          lt_get(a, d, GT_CUBLASLT_MATMUL_DESC_BIAS_POINTER, (void *)&o->bias, sizeof(void *));
  if (!o->ok) return;
  (void)lt_get(a, d, GT_CUBLASLT_MATMUL_DESC_FILL_MODE, &o->fill_mode, 4);
  (void)lt_get(a, d, GT_CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &o->bias_data_type, 4);
  (void)lt_get(a, d, GT_CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &o->bias_batch_stride, 8);
  (void)lt_get(a, d, GT_CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, (void *)&o->aux,
               sizeof(void *));
  (void)lt_get(a, d, GT_CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE,
               &o->alpha_vector_batch_stride, 8);
  (void)lt_get(a, d, GT_CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &o->sm_count_target, 4);
  lt_read_scales(a, d, o);
  (void)lt_get(a, d, GT_CUBLASLT_MATMUL_DESC_FAST_ACCUM, &o->fast_accum, 1);
  (void)lt_get(a, d, GT_CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, (void *)&o->emulation_desc,
               sizeof(void *));
}

static bool lt_lget(const gt_preload_api_t *a, cublasLtMatrixLayout_t l, int attr, void *buf,
                    size_t size) {
  size_t w = 0;
  return a->LtLayoutGet(l, (cublasLtMatrixLayoutAttribute_t)attr, buf, size, &w) ==
             CUBLAS_STATUS_SUCCESS &&
         w == size;
}

static void lt_read_layout(const gt_preload_api_t *a, cublasLtMatrixLayout_t l,
                           gt_cublaslt_layout_t *o) {
  memset(o, 0, sizeof *o);
  o->batch_count = 1;
  if (!a->LtLayoutGet || !l) return;
  o->ok = lt_lget(a, l, GT_CUBLASLT_MATRIX_LAYOUT_TYPE, &o->type, 4) &&
          lt_lget(a, l, GT_CUBLASLT_MATRIX_LAYOUT_ORDER, &o->order, 4) &&
          lt_lget(a, l, GT_CUBLASLT_MATRIX_LAYOUT_ROWS, &o->rows, 8) &&
          lt_lget(a, l, GT_CUBLASLT_MATRIX_LAYOUT_COLS, &o->cols, 8) &&
          lt_lget(a, l, GT_CUBLASLT_MATRIX_LAYOUT_LD, &o->ld, 8) &&
          lt_lget(a, l, GT_CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &o->batch_count, 4) &&
          lt_lget(a, l, GT_CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &o->batch_stride, 8) &&
          lt_lget(a, l, GT_CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, &o->plane_offset, 8);
  (void)lt_lget(a, l, GT_CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, &o->batch_mode, 4);
}

void gt_preload_lt_read(cublasLtMatmulDesc_t compute_desc, cublasLtMatrixLayout_t a,
                        cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                        cublasLtMatrixLayout_t d, gt_cublaslt_desc_t *desc,
                        gt_cublaslt_layout_t lay[4]) {
  /* Already resolved (and refilled if the getters were missing) by the entry point. */
  const gt_preload_api_t *api = gt_preload_api();
  lt_read_desc(api, compute_desc, desc);
  lt_read_layout(api, a, &lay[0]);
  lt_read_layout(api, b, &lay[1]);
  lt_read_layout(api, c, &lay[2]);
  lt_read_layout(api, d, &lay[3]);
}
