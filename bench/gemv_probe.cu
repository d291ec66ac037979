// Which design streams a large bf16 weight fastest at 1..8 tokens when no call finds its operands
// in L2, against cublasGemmEx in the same process and the same harness.
//
// Every timed graph holds L calls; call i reads weight copy i % NC and writes its own output. In
// the "cold" mode NC >= 2 and the copies total at least 3x the L2, so no call is timed on bytes
// the previous call left in L2 (a model never issues the same weight twice in a row). The "one"
// mode rotates a single copy (what a harness that only counts total bytes against the L2 does for
// a weight larger than 3x the L2); the difference between the two modes is the L2 reuse a kernel
// gets from back-to-back calls on one weight.
//
// Designs (D[tok, row] = sum_k W[row, k] * X[tok, k], the nn.Linear view; K-contiguous rows):
//   rowblk<R, THREADS, HINT>: a CTA owns R weight rows over the whole K, every thread loads 16
//     bytes of each row per step (HINT 0: ld.global.nc; 1: .L1::no_allocate.L2::256B; 2: that
//     plus an L2 evict-first cache policy), partial sums meet through shuffles and shared memory.
//     R = 1 with 256-512 threads is the shape of Inductor's 1-token reduction kernel.
//   dec_r<R>_w<W>_u<U>_v<V>[_nopf][_nopdl]: the decode family's body (gtk::decode_body of
//     src/kernels/gt_decode.cuh, the template the instances instantiate) in the instances' CTA
//     shape, with the instances' bulk L2 prefetch of the CTA's first K step before
//     griddepcontrol.wait (dropped by _nopf: its PF argument) and launched with programmatic
//     dependent launch as the provider does (dropped by _nopdl): which of the two costs the
//     instances their bandwidth, if either.
//
// Build and run on the GPU machine:
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Isrc -Isrc/kernels -Iinclude \
//     bench/gemv_probe.cu -lcublas -o /tmp/gemv_probe && /tmp/gemv_probe [--tokens 1,8] \
//     [--rounds 3] [--filter 28672] [--shapes 57344x8192,4096x4096] [--cold-only]
// Output: one line per (shape, tokens, design, mode): median us per call and TB/s of weights.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "gt_decode.cuh"

#define CK(x)                                                                         \
  do {                                                                                \
    cudaError_t e_ = (x);                                                             \
    if (e_ != cudaSuccess) {                                                          \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

template <int HINT>
__device__ __forceinline__ uint4 ldw(const uint16_t *p, uint64_t pol) {
  uint4 r;
  if constexpr (HINT == 0) {
    asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
  } else if constexpr (HINT == 1) {
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
  } else {
    asm volatile(
        "ld.global.nc.L1::no_allocate.L2::cache_hint.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p), "l"(pol));
  }
  return r;
}

__device__ __forceinline__ float2 bf2(uint32_t v) {
  return make_float2(__uint_as_float(v << 16), __uint_as_float(v & 0xffff0000u));
}

// R rows per CTA, NT tokens, THREADS threads, every thread 8 elements of K per step, U steps
// issued before their use.
template <int R, int NT, int THREADS, int HINT, int U>
__global__ void __launch_bounds__(THREADS) rowblk(const uint16_t *__restrict__ W,
                                                  const uint16_t *__restrict__ X,
                                                  uint16_t *__restrict__ D, int m, int k) {
  constexpr int STEP = THREADS * 8;
  const int row0 = blockIdx.x * R;
  uint64_t pol = 0;
  if constexpr (HINT == 2)
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  float acc[R][NT];
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int t = 0; t < NT; t++) acc[r][t] = 0.f;
  const uint16_t *wp[R];
#pragma unroll
  for (int r = 0; r < R; r++) wp[r] = W + (size_t)min(row0 + r, m - 1) * k;
  int k0 = threadIdx.x * 8;
  for (; k0 + (U - 1) * STEP < k; k0 += U * STEP) {
    uint4 w[U][R];
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
      for (int r = 0; r < R; r++) w[u][r] = ldw<HINT>(wp[r] + k0 + u * STEP, pol);
#pragma unroll
    for (int u = 0; u < U; u++) {
#pragma unroll
      for (int t = 0; t < NT; t++) {
        const uint4 xv = __ldg(reinterpret_cast<const uint4 *>(X + (size_t)t * k + k0 + u * STEP));
        const uint32_t xw[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
        for (int r = 0; r < R; r++) {
          const uint32_t ww[4] = {w[u][r].x, w[u][r].y, w[u][r].z, w[u][r].w};
#pragma unroll
          for (int j = 0; j < 4; j++) {
            const float2 a = bf2(ww[j]), b = bf2(xw[j]);
            acc[r][t] = fmaf(a.x, b.x, acc[r][t]);
            acc[r][t] = fmaf(a.y, b.y, acc[r][t]);
          }
        }
      }
    }
  }
  for (; k0 < k; k0 += STEP) {  // K a multiple of 8 (checked by the host)
    uint4 w[R];
#pragma unroll
    for (int r = 0; r < R; r++) w[r] = ldw<HINT>(wp[r] + k0, pol);
#pragma unroll
    for (int t = 0; t < NT; t++) {
      const uint4 xv = __ldg(reinterpret_cast<const uint4 *>(X + (size_t)t * k + k0));
      const uint32_t xw[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
      for (int r = 0; r < R; r++) {
        const uint32_t ww[4] = {w[r].x, w[r].y, w[r].z, w[r].w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
          const float2 a = bf2(ww[j]), b = bf2(xw[j]);
          acc[r][t] = fmaf(a.x, b.x, acc[r][t]);
          acc[r][t] = fmaf(a.y, b.y, acc[r][t]);
        }
      }
    }
  }
  __shared__ float red[THREADS / 32][R * NT];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int t = 0; t < NT; t++) {
      float v = acc[r][t];
#pragma unroll
      for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane == 0) red[warp][r * NT + t] = v;
    }
  __syncthreads();
  if (threadIdx.x < R * NT) {
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < THREADS / 32; w++) s += red[w][threadIdx.x];
    const int r = threadIdx.x / NT, t = threadIdx.x % NT;
    if (row0 + r < m) D[(size_t)t * m + row0 + r] = __bfloat16_as_ushort(__float2bfloat16_rn(s));
  }
}

// The decode instances' body (gtk::decode_body, the same template they instantiate) on the
// probe's operands: D[t * m + row] is the BLAS column-major D with ldc = m. PF: its pre-wait L2
// prefetch; PDL is the launch's (dec_launch).
template <int R, int NT, int WK, int KU, int V, bool PF>
__global__ void __launch_bounds__(WK * 32) dec(const __grid_constant__ gt_kargs_t a) {
  gtk::decode_body<gtk::bf16, NT, R, WK, KU, V, false, PF>(a);
}

__global__ void fill(uint16_t *p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 2654435761u ^ seed;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
    const float f = ((h & 0xffff) / 65536.f - 0.5f) * 0.1f;
    p[i] = __bfloat16_as_ushort(__float2bfloat16_rn(f));
  }
}

struct problem {
  int m, k, n;  // out features, in features, tokens
};

using launch_fn =
    std::function<void(cudaStream_t, const uint16_t *W, const uint16_t *X, uint16_t *D)>;

struct design {
  std::string name;
  int nt_max;  // tokens it handles
  std::function<launch_fn(const problem &)> make;
};

template <int R, int NT, int THREADS, int HINT, int U>
launch_fn rowblk_launch(const problem &p) {
  return [p](cudaStream_t s, const uint16_t *W, const uint16_t *X, uint16_t *D) {
    rowblk<R, NT, THREADS, HINT, U><<<(p.m + R - 1) / R, THREADS, 0, s>>>(W, X, D, p.m, p.k);
  };
}

template <int R, int NT, int WK, int KU, int V, bool PF, bool PDL>
launch_fn dec_launch(const problem &p) {
  return [p](cudaStream_t s, const uint16_t *W, const uint16_t *X, uint16_t *D) {
    gt_kargs_t a = {};
    a.A = W, a.B = X, a.D = D;
    a.m = p.m, a.n = p.n, a.k = p.k, a.lda = p.k, a.ldb = p.k, a.ldc = p.m;
    a.kchunk = p.k, a.alpha = 1.f, a.splits = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((p.m + R - 1) / R);
    cfg.blockDim = dim3(WK * 32);
    cfg.dynamicSmemBytes = WK * NT * R * sizeof(float);
    cfg.stream = s;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = PDL ? 1 : 0;
    CK(cudaLaunchKernelEx(&cfg, dec<R, NT, WK, KU, V, PF>, a));
  };
}

#define DEC(R, W, U, V, PF, PDL, SUF)                                                           \
  design{"dec_r" #R "_w" #W "_u" #U "_v" #V SUF, 4, [](const problem &p) -> launch_fn {         \
           switch (p.n) {                                                                       \
             case 1: return dec_launch<R, 1, W, U, V, PF, PDL>(p);                              \
             case 2: return dec_launch<R, 2, W, U, V, PF, PDL>(p);                              \
             default: return dec_launch<R, 4, W, U, V, PF, PDL>(p);                             \
           }                                                                                    \
         }}
#define DEC4(R, W, U, V)                                                                         \
  DEC(R, W, U, V, true, true, ""), DEC(R, W, U, V, false, true, "_nopf"),                        \
      DEC(R, W, U, V, true, false, "_nopdl"), DEC(R, W, U, V, false, false, "_nopf_nopdl")

#define RB(R, T, H, U)                                                                          \
  design{"rowblk_r" #R "_t" #T "_h" #H "_u" #U, 8, [](const problem &p) -> launch_fn {          \
           switch (p.n) {                                                                       \
             case 1: return rowblk_launch<R, 1, T, H, U>(p);                                    \
             case 2: return rowblk_launch<R, 2, T, H, U>(p);                                    \
             case 4: return rowblk_launch<R, 4, T, H, U>(p);                                    \
             default: return rowblk_launch<R, 8, T, H, U>(p);                                   \
           }                                                                                    \
         }}

static std::vector<design> designs() {
  return {
      RB(1, 256, 1, 1), RB(1, 512, 1, 1), RB(1, 256, 0, 1), RB(1, 512, 0, 1), RB(1, 256, 2, 1),
      RB(1, 128, 1, 2), RB(1, 256, 1, 2), RB(2, 256, 1, 1), RB(2, 128, 1, 2), RB(4, 128, 1, 1),
      RB(4, 256, 1, 1), RB(2, 512, 1, 1), RB(4, 64, 1, 2), RB(8, 128, 1, 1), RB(1, 256, 1, 4),
      RB(1, 256, 2, 2), RB(1, 512, 1, 2),
      // The decode family's instances at 1..4 tokens (space.json), each four ways.
      DEC4(1, 8, 4, 8), DEC4(1, 16, 2, 8), DEC4(2, 8, 4, 8), DEC4(4, 4, 4, 4), DEC4(4, 4, 2, 8),
      DEC4(8, 4, 2, 8),
      // More bytes in flight per thread than any instance (does a part with more bandwidth per
      // SM need them?): 4 rows x 8 batches and 8 rows x 4 batches of 16 bytes.
      DEC4(4, 4, 8, 8), DEC(8, 4, 4, 8, true, true, ""), DEC(8, 4, 4, 8, false, true, "_nopf"),
      RB(1, 128, 1, 4), RB(4, 128, 1, 4), RB(2, 256, 1, 4),
  };
}

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct options {
  std::vector<int> tokens = {1, 8};
  int rounds = 3;
  const char *filter = nullptr;
  std::string only;  // ",AxB,CxD," when --shapes names them
  bool cold_only = false;
};

// false (usage printed) on an unknown or incomplete argument.
static bool parse(int argc, char **argv, options &o) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--tokens") && i + 1 < argc) {
      o.tokens.clear();
      for (char *t = strtok(argv[++i], ","); t; t = strtok(nullptr, ","))
        o.tokens.push_back(atoi(t));
    } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
      o.rounds = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--filter") && i + 1 < argc) {
      o.filter = argv[++i];
    } else if (!strcmp(argv[i], "--shapes") && i + 1 < argc) {
      o.only = std::string(",") + argv[++i] + ",";
    } else if (!strcmp(argv[i], "--cold-only")) {
      o.cold_only = true;
    } else {
      fprintf(stderr,
              "usage: %s [--tokens 1,8] [--rounds 3] [--filter SUBSTR] [--shapes MxK,...] "
              "[--cold-only]\n",
              argv[0]);
      return false;
    }
  }
  return true;
}

int main(int argc, char **argv) {
  options o;
  if (!parse(argc, argv, o)) return 2;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const size_t l2 = prop.l2CacheSize;
  printf("device: %s, %d SMs, L2 %.0f MB\n", prop.name, prop.multiProcessorCount, l2 / 1e6);
  printf("method: CUDA graph of L calls, call i on copy i %% NC; median of 9 replays per round,\n"
         "        median of %d interleaved rounds; cold: NC >= 2 and >= 3x L2; one: NC = 1\n",
         o.rounds);
  const std::pair<int, int> shapes[] = {{4096, 4096},  {6144, 4096},   {14336, 4096},
                                        {4096, 14336}, {28672, 4096},  {10240, 8192},
                                        {8192, 8192},  {28672, 8192},  {8192, 28672},
                                        {57344, 8192}, {128256, 4096}, {128256, 8192}};
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
  void *ws;
  CK(cudaMalloc(&ws, 32 << 20));
  cublasSetWorkspace(h, ws, 32 << 20);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cublasSetStream(h, s);
  const auto ds = designs();
  printf("%-14s %3s %-24s %9s %7s %9s %7s %8s\n", "shape", "tok", "design", "cold_us", "TB/s",
         "one_us", "TB/s", "rel_err");
  for (const auto &mk : shapes) {
    const int m = mk.first, k = mk.second;
    char sh[32];
    snprintf(sh, sizeof sh, "%dx%d", m, k);
    if (o.filter && !strstr(sh, o.filter)) continue;
    if (!o.only.empty() && o.only.find(std::string(",") + sh + ",") == std::string::npos)
      continue;
    const size_t wel = (size_t)m * k, wbytes = wel * 2;
    size_t freeb, totb;
    CK(cudaMemGetInfo(&freeb, &totb));
    int nc = (int)std::max<size_t>(2, (3 * l2 + wbytes - 1) / wbytes);
    while (nc > 2 && nc * wbytes > freeb / 2) nc--;
    if (nc * wbytes > freeb - (2ull << 30)) {
      printf("%-14s skipped (memory)\n", sh);
      continue;
    }
    std::vector<uint16_t *> Wc(nc);
    for (int c = 0; c < nc; c++) {
      CK(cudaMalloc(&Wc[c], wbytes));
      fill<<<1024, 256>>>(Wc[c], wel, 17u + c);
    }
    // Calls per graph: about 4 ms of weight streaming at 4.5 TB/s, 20 to 200 calls, whole
    // rotations, at least two of them.
    const double call_ns = wbytes / 4.5e3;
    const int calls = std::min(200, std::max(20, (int)(4e6 / call_ns) + 1));
    const int L = std::max(2 * nc, calls / nc * nc);
    for (int n : o.tokens) {
      problem p{m, k, n};
      uint16_t *X, *Dall;
      CK(cudaMalloc(&X, (size_t)nc * n * k * 2));
      fill<<<256, 256>>>(X, (size_t)nc * n * k, 99u);
      CK(cudaMalloc(&Dall, (size_t)L * n * m * 2));
      CK(cudaDeviceSynchronize());
      struct cand {
        std::string name;
        launch_fn fn;
        std::vector<float> cold, one;
        double err = 0;
      };
      std::vector<cand> cs;
      cs.push_back({"cublasGemmEx", [h, p](cudaStream_t, const uint16_t *W, const uint16_t *Xp,
                                           uint16_t *D) {
                      const float a = 1.f, b = 0.f;
                      cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, p.m, p.n, p.k, &a, W, CUDA_R_16BF,
                                   p.k, Xp, CUDA_R_16BF, p.k, &b, D, CUDA_R_16BF, p.m,
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
                    }});
      for (auto &d : ds)
        if (n <= d.nt_max && (n == 1 || n == 2 || n == 4 || n == 8))
          cs.push_back({d.name, d.make(p)});
      // Correctness against cuBLAS on copy 0.
      std::vector<uint16_t> ref((size_t)n * m), got((size_t)n * m);
      for (size_t ci = 0; ci < cs.size(); ci++) {
        cs[ci].fn(s, Wc[0], X, Dall);
        CK(cudaStreamSynchronize(s));
        CK(cudaMemcpy(ci == 0 ? ref.data() : got.data(), Dall, ref.size() * 2,
                      cudaMemcpyDeviceToHost));
        if (ci) {
          double num = 0, den = 0;
          for (size_t i = 0; i < ref.size(); i++) {
            const uint32_t ua = (uint32_t)ref[i] << 16, ub = (uint32_t)got[i] << 16;
            float a, b;
            memcpy(&a, &ua, 4), memcpy(&b, &ub, 4);
            num += (double)(a - b) * (a - b), den += (double)a * a;
          }
          cs[ci].err = std::sqrt(num / (den > 0 ? den : 1));
        }
      }
      auto time_one = [&](cand &c, bool cold) {
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < L; i++) {
          const int cp = cold ? i % nc : 0;
          c.fn(s, Wc[cp], X + (size_t)cp * n * k, Dall + (size_t)i * n * m);
        }
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        cudaEvent_t e0, e1;
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
        CK(cudaGraphLaunch(ge, s));
        CK(cudaGraphLaunch(ge, s));
        std::vector<float> t;
        for (int r = 0; r < 9; r++) {
          CK(cudaEventRecord(e0, s));
          CK(cudaGraphLaunch(ge, s));
          CK(cudaEventRecord(e1, s));
          CK(cudaEventSynchronize(e1));
          float ms;
          CK(cudaEventElapsedTime(&ms, e0, e1));
          t.push_back(ms * 1000.f / L);
        }
        (cold ? c.cold : c.one).push_back(median(t));
        cudaEventDestroy(e0), cudaEventDestroy(e1);
        cudaGraphExecDestroy(ge), cudaGraphDestroy(g);
      };
      for (int r = 0; r < o.rounds; r++)
        for (auto &c : cs) {
          time_one(c, true);
          if (!o.cold_only) time_one(c, false);
        }
      for (auto &c : cs) {
        const float tc = median(c.cold), to = o.cold_only ? NAN : median(c.one);
        printf("%-14s %3d %-24s %9.2f %7.2f %9.2f %7.2f %8.1e\n", sh, n, c.name.c_str(), tc,
               wbytes / (tc * 1e6), to, wbytes / (to * 1e6), c.err);
      }
      fflush(stdout);
      cudaFree(X), cudaFree(Dall);
    }
    for (auto w : Wc) cudaFree(w);
  }
  return 0;
}
