// libgemmtune_torchmm.so: torch's grouped GEMM entry point, interposed. Loaded with LD_PRELOAD
// next to libgemmtune_preload.so, it defines at::cuda::detail::bf16bf16_grouped_mm (exported by
// libtorch_cuda and called through the PLT, so this definition receives every call, eager, under
// torch.compile and at CUDA graph capture), reads the call's tensors into plain values and hands
// them to the shim (gemmtune_grouped_begin, runtime/gt_grouped_entry.h), which decides. On a hit
// the tuned kernel has run; on anything else torch's own function runs, unchanged.
//
// It links nothing of torch: libtorch_cuda is loaded RTLD_LOCAL, so a reference to it would not
// resolve. The original and the two c10 functions it needs are found with dlopen(RTLD_NOLOAD) +
// dlsym when the first call arrives (by then torch is loaded). A tensor's layout is read through
// torch's inline accessors, which are right only for the torch these headers come from: before
// it reads any tensor it checks that the running torch (version.py next to the libtorch_cuda.so
// the original lives in) is the one it was built against (GT_TORCH_BUILD_VERSION), and otherwise
// says so once and only forwards. It never throws into torch and never aborts: anything it does
// not understand goes to the original.
//
// The parameters are taken as pointers: at::Tensor and std::optional<at::Tensor> are not
// trivially copyable, so the Itanium C++ ABI passes each by the address of a temporary the caller
// owns and destroys; at::Tensor& is an address too. The definition below is therefore the mangled
// function itself, and forwarding passes the same addresses on. f8f8bf16_grouped_mm (fp8 rowwise,
// torch._scaled_grouped_mm) is defined the same way, with its two fp32 scale tensors read too.
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <optional>

#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAStream.h>

#include "runtime/gt_grouped_entry.h"

#ifndef GT_TORCH_BUILD_VERSION
#error "GT_TORCH_BUILD_VERSION (torch's __version__ these headers come from) must be defined"
#endif

#define GT_BF16_GROUPED_MM "_ZN2at4cuda6detail19bf16bf16_grouped_mmENS_6TensorES2_St8optionalIS2_ES4_RS2_"

// The fp8 rowwise form (scale_a per row of mat_a, scale_b per group and output column).
#define GT_F8_GROUPED_MM "_ZN2at4cuda6detail19f8f8bf16_grouped_mmENS_6TensorES2_S2_S2_St8optionalIS2_ES4_bRS2_"

extern "C" void gt_torchmm_bf16bf16_grouped_mm(void *mat_a, void *mat_b, void *offs, void *bias,
                                              void *out) __asm__(GT_BF16_GROUPED_MM);
extern "C" void gt_torchmm_f8f8bf16_grouped_mm(void *mat_a, void *mat_b, void *scale_a,
                                              void *scale_b, void *offs, void *bias,
                                              bool use_fast_accum, void *out)
    __asm__(GT_F8_GROUPED_MM);

// The two functions of libc10 that torch's inline accessors call on their error paths (a tensor
// without a device, a storage whose data may not be accessed). libc10 is not in the global scope,
// so references to them would not resolve (at once under RTLD_NOW or LD_BIND_NOW, which then
// refuses to load this library): they are defined here instead, local to this library (the
// version script exports nothing else, so torch's own copies are untouched), and throw to the
// bridge's entry point, which gives the call to the original.
namespace {
struct bridge_refusal {};
} // namespace

void c10::detail::torchCheckFail(const char *, const char *, uint32_t, const char *) {
  throw bridge_refusal();
}

void c10::StorageImpl::throw_data_ptr_access_error() const { throw bridge_refusal(); }

namespace {

using original_fn = void (*)(void *, void *, void *, void *, void *);
using original_f8_fn = void (*)(void *, void *, void *, void *, void *, void *, bool, void *);
using get_stream_fn = c10::cuda::CUDAStream (*)(c10::DeviceIndex);
using stream_of_fn = cudaStream_t (*)(const c10::cuda::CUDAStream *);

struct bridge {
  original_fn original = nullptr;
  original_f8_fn original_f8 = nullptr;
  get_stream_fn get_stream = nullptr;
  stream_of_fn stream_of = nullptr;
  gemmtune_grouped_begin_fn begin = nullptr;
  gemmtune_grouped_end_fn end = nullptr;
  bool read_tensors = false; // the running torch is the one built against
};

bridge g_bridge;
pthread_once_t g_once = PTHREAD_ONCE_INIT;
const c10::TensorImpl *g_undefined = nullptr; // c10::UndefinedTensorImpl::_singleton, by dlsym

void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void say(const char *fmt, ...) {
  char line[1024];
  int n = snprintf(line, sizeof line, "gemmtune: ");
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  ssize_t w = write(2, line, (size_t)n);
  (void)w;
}

// The torch version of the library that holds fn: __version__ of the version.py beside
// torch/lib/. False when it cannot be read.
bool running_version(void *fn, char *out, size_t cap) {
  Dl_info info;
  if (!dladdr(fn, &info) || !info.dli_fname) return false;
  char path[4096];
  snprintf(path, sizeof path, "%s", info.dli_fname);
  char *slash = strrchr(path, '/');
  if (!slash) return false;
  *slash = '\0'; // .../torch/lib
  slash = strrchr(path, '/');
  if (!slash) return false;
  snprintf(slash, sizeof path - (size_t)(slash - path), "/version.py");
  FILE *f = fopen(path, "r");
  if (!f) return false;
  char line[512];
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) {
    // The assignment line only: `__all__ = ['__version__', ...]` names it too.
    const char *q = line;
    while (*q == ' ' || *q == '\t') q++;
    if (strncmp(q, "__version__", 11) != 0) continue;
    q += 11;
    while (*q == ' ' || *q == '\t') q++;
    if (*q != '=' || !(q = strchr(q, '\''))) continue;
    const char *e = strchr(q + 1, '\'');
    if (!e || (size_t)(e - q - 1) >= cap) continue;
    memcpy(out, q + 1, (size_t)(e - q - 1));
    out[e - q - 1] = '\0';
    found = true;
  }
  fclose(f);
  return found;
}

void resolve() {
  bridge &b = g_bridge;
  void *cuda = dlopen("libtorch_cuda.so", RTLD_NOW | RTLD_NOLOAD);
  if (cuda) {
    b.original = (original_fn)dlsym(cuda, GT_BF16_GROUPED_MM);
    b.original_f8 = (original_f8_fn)dlsym(cuda, GT_F8_GROUPED_MM);
  }
  if (!b.original) {
    say("torch bridge: at::cuda::detail::bf16bf16_grouped_mm not found in a loaded "
        "libtorch_cuda.so: its calls cannot be served");
    return;
  }
  b.begin = (gemmtune_grouped_begin_fn)dlsym(RTLD_DEFAULT, GEMMTUNE_GROUPED_BEGIN_SYM);
  b.end = (gemmtune_grouped_end_fn)dlsym(RTLD_DEFAULT, GEMMTUNE_GROUPED_END_SYM);
  if (!b.begin || !b.end) return; // no shim: forward only (nothing to say: nothing was asked)
  char running[128] = "";
  if (!running_version((void *)b.original, running, sizeof running) ||
      strcmp(running, GT_TORCH_BUILD_VERSION) != 0) {
    say("torch bridge: built against torch %s, running torch %s: grouped GEMMs are not "
        "interposed (rebuild with GT_TORCH_INCLUDE of the running torch)",
        GT_TORCH_BUILD_VERSION, running[0] ? running : "(unknown)");
    return;
  }
  void *c10 = dlopen("libc10_cuda.so", RTLD_NOW | RTLD_NOLOAD);
  if (c10) {
    b.get_stream = (get_stream_fn)dlsym(c10, "_ZN3c104cuda20getCurrentCUDAStreamEa");
    b.stream_of = (stream_of_fn)dlsym(c10, "_ZNK3c104cuda10CUDAStream6streamEv");
  }
  void *c10core = dlopen("libc10.so", RTLD_NOW | RTLD_NOLOAD);
  if (c10core)
    g_undefined = static_cast<const c10::TensorImpl *>(
        dlsym(c10core, "_ZN3c1019UndefinedTensorImpl10_singletonE"));
  if (!b.get_stream || !b.stream_of || !g_undefined) {
    say("torch bridge: c10::cuda::getCurrentCUDAStream not found in a loaded libc10_cuda.so: "
        "grouped GEMMs are not interposed");
    return;
  }
  b.read_tensors = true;
}

// A tensor's facts are read from its TensorImpl with the plainest inline accessors only, so that
// nothing here refers to data of libc10 (which would not resolve: libc10 is not in the global
// scope) and the functions it refers to lie only on error paths torch's own checks have already
// excluded for these tensors (lazily bound, never called). An undefined tensor is one whose impl
// is c10's UndefinedTensorImpl singleton (g_undefined).

const c10::TensorImpl *impl_of(const void *tensor) {
  const c10::TensorImpl *t = static_cast<const at::Tensor *>(tensor)->unsafeGetTensorImpl();
  return t == g_undefined ? nullptr : t;
}

const c10::TensorImpl *impl_of_optional(const void *opt) {
  const auto *o = static_cast<const std::optional<at::Tensor> *>(opt);
  return o->has_value() ? impl_of(&o->value()) : nullptr;
}

gt_dtype_t dtype_of(const c10::TensorImpl *t, size_t *bytes) {
  const caffe2::TypeMeta d = t->dtype();
  *bytes = 0;
  if (d == caffe2::TypeMeta::Make<c10::BFloat16>()) return *bytes = 2, GT_DT_BF16;
  if (d == caffe2::TypeMeta::Make<c10::Half>()) return *bytes = 2, GT_DT_F16;
  if (d == caffe2::TypeMeta::Make<float>()) return *bytes = 4, GT_DT_F32;
  if (d == caffe2::TypeMeta::Make<c10::Float8_e4m3fn>()) return *bytes = 1, GT_DT_F8E4M3FN;
  return GT_DT_F64; // a type the key builder marks as not tuned; never dereferenced
}

// The address of element 0: the storage's data plus the storage offset.
const void *data_of(const c10::TensorImpl *t, size_t bytes) {
  const char *base = static_cast<const char *>(
      t->unsafe_storage().unsafeGetStorageImpl()->data_ptr().get());
  return base ? base + t->storage_offset() * (int64_t)bytes : nullptr;
}

// The call's facts as gt_grouped_key takes them. False for anything not on one CUDA device.
bool read_call(const char *entry, void *mat_a, void *mat_b, void *offs_opt, void *bias_opt,
               void *out, gt_grouped_call_t *c, gemmtune_grouped_ops_t *ops) {
  const c10::TensorImpl *a = impl_of(mat_a), *w = impl_of(mat_b), *o = impl_of(out);
  const c10::TensorImpl *offs = impl_of_optional(offs_opt), *bias = impl_of_optional(bias_opt);
  if (!a || !w || !o || !a->is_cuda() || !w->is_cuda() || !o->is_cuda()) return false;
  if (!a->has_storage() || !w->has_storage() || !o->has_storage()) return false;
  memset(c, 0, sizeof *c);
  memset(ops, 0, sizeof *ops);
  size_t ab = 0, wb = 0, ob = 0;
  c->entry = entry;
  c->fp8_scaled = strcmp(entry, "f8f8bf16_grouped_mm") == 0;
  c->a_type = dtype_of(a, &ab);
  c->b_type = dtype_of(w, &wb);
  c->out_type = dtype_of(o, &ob);
  c->a_2d = a->dim() == 2;
  c->b_3d = w->dim() == 3;
  c->has_offs = offs != nullptr;
  c->has_bias = bias != nullptr;
  if (!c->a_2d || !c->b_3d || o->dim() != 2 || !ab || !wb || !ob) {
    c->rows = c->k = c->n = c->groups = 1; // keyed only to be marked: shapes do not matter
    return true;
  }
  if (offs && (offs->dtype() != caffe2::TypeMeta::Make<int32_t>() || offs->dim() != 1 ||
               !offs->is_cuda() || !offs->has_storage() || offs->sizes()[0] != w->sizes()[0]))
    return false;
  const c10::IntArrayRef as = a->sizes(), ws = w->sizes(), os = o->sizes();
  const c10::IntArrayRef ast = a->strides(), wst = w->strides(), ost = o->strides();
  c->rows = as[0];
  c->k = as[1];
  c->groups = ws[0];
  c->n = ws[2];
  if (ws[1] != c->k || os[0] != c->rows || os[1] != c->n) return false;
  c->a_row_stride = ast[0];
  c->a_col_stride = ast[1];
  c->b_group_stride = wst[0];
  c->b_k_stride = wst[1];
  c->b_n_stride = wst[2];
  c->out_row_stride = ost[0];
  c->out_col_stride = ost[1];
  ops->mat_a = data_of(a, ab);
  ops->mat_b = data_of(w, wb);
  ops->offs = offs ? static_cast<const int32_t *>(data_of(offs, 4)) : nullptr;
  ops->bias = bias ? data_of(bias, ob) : nullptr;
  ops->out = const_cast<void *>(data_of(o, ob));
  return ops->mat_a && ops->mat_b && ops->out && (!offs || ops->offs);
}

// f8f8bf16_grouped_mm's scales into the call: rowwise when scale_a is fp32 [rows] contiguous and
// scale_b fp32 [groups][N] with strides (N, 1), the layout the own e4m3 kernels read (anything
// else is keyed and marked: gt_grouped_key). The pointers go to ops either way (NULL if unread).
void read_scales(void *scale_a, void *scale_b, bool fast_accum, gt_grouped_call_t *c,
                 gemmtune_grouped_ops_t *ops) {
  const c10::TensorImpl *sa = impl_of(scale_a), *sb = impl_of(scale_b);
  c->fast_accum = fast_accum;
  if (!sa || !sb || !sa->is_cuda() || !sb->is_cuda() || !sa->has_storage() || !sb->has_storage())
    return;
  const caffe2::TypeMeta f32 = caffe2::TypeMeta::Make<float>();
  if (sa->dtype() != f32 || sb->dtype() != f32) return;
  c->scales_rowwise = sa->dim() == 1 && sa->sizes()[0] == c->rows && sa->strides()[0] == 1 &&
                      sb->dim() == 2 && sb->sizes()[0] == c->groups && sb->sizes()[1] == c->n &&
                      sb->strides()[1] == 1 && (c->groups == 1 || sb->strides()[0] == c->n);
  ops->scale_a = static_cast<const float *>(data_of(sa, 4));
  ops->scale_b = static_cast<const float *>(data_of(sb, 4));
  if (!ops->scale_a || !ops->scale_b) c->scales_rowwise = false;
}

// Keys the call and asks the shim (GEMMTUNE_GROUPED_*): PASS when the tensors cannot be read.
// scale_a, scale_b: f8f8bf16_grouped_mm's scale tensors (NULL for bf16bf16_grouped_mm).
int ask_shim(const bridge &b, const char *entry, void *mat_a, void *mat_b, void *offs, void *bias,
             void *out, void *scale_a = nullptr, void *scale_b = nullptr,
             bool fast_accum = false) {
  if (!b.read_tensors) return GEMMTUNE_GROUPED_PASS;
  try {
    gt_grouped_call_t call;
    gemmtune_grouped_ops_t ops;
    if (!read_call(entry, mat_a, mat_b, offs, bias, out, &call, &ops)) return GEMMTUNE_GROUPED_PASS;
    if (call.fp8_scaled && scale_a && scale_b) read_scales(scale_a, scale_b, fast_accum, &call, &ops);
    c10::cuda::CUDAStream s = b.get_stream(impl_of(out)->device().index());
    return b.begin(&call, &ops, b.stream_of(&s));
  } catch (...) {
    return GEMMTUNE_GROUPED_PASS; // a tensor an accessor refused: torch's own function decides
  }
}

} // namespace

extern "C" __attribute__((visibility("default"))) void
gt_torchmm_bf16bf16_grouped_mm(void *mat_a, void *mat_b, void *offs, void *bias, void *out) {
  pthread_once(&g_once, resolve);
  const bridge &b = g_bridge;
  if (!b.original) return; // torch's own definition is not loaded: nothing can run this call
  int r = ask_shim(b, "bf16bf16_grouped_mm", mat_a, mat_b, offs, bias, out);
  if (r == GEMMTUNE_GROUPED_SERVED) return;
  b.original(mat_a, mat_b, offs, bias, out);
  if (r == GEMMTUNE_GROUPED_ENTERED) b.end();
}

extern "C" __attribute__((visibility("default"))) void
gt_torchmm_f8f8bf16_grouped_mm(void *mat_a, void *mat_b, void *scale_a, void *scale_b, void *offs,
                               void *bias, bool use_fast_accum, void *out) {
  pthread_once(&g_once, resolve);
  const bridge &b = g_bridge;
  if (!b.original_f8) return; // torch's own definition is not loaded: nothing can run this call
  int r = ask_shim(b, "f8f8bf16_grouped_mm", mat_a, mat_b, offs, bias, out, scale_a, scale_b,
                   use_fast_accum);
  if (r == GEMMTUNE_GROUPED_SERVED) return;
  b.original_f8(mat_a, mat_b, scale_a, scale_b, offs, bias, use_fast_accum, out);
  if (r == GEMMTUNE_GROUPED_ENTERED) b.end();
}
