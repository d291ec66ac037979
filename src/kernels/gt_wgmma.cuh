// wgmma.mma_async wrappers for the wg family: D(64 x N, f32, registers) += A(64 x 16, shared
// memory) * B(16 x N, shared memory), both operands K-major and described by 64-bit shared-memory
// descriptors (see gt_wg.cuh). An inline-asm operand list has a fixed length, so there is one
// statement per N (GT_WGMMA_N<N>, taking the PTX element type) and one specialization per
// (element type, N). Register i of d holds row 16*warp + lane/4 + 8*((i/2)%2), column
// 8*(i/4) + 2*(lane%4) + i%2 of the warpgroup's 64 x N tile.
#pragma once

#include "gt_kcommon.cuh"

namespace gtk {

template <typename T, int N> struct wgmma_ss;

#define GT_WGMMA_N8(TY)                                                  \
asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"                 \
             "wgmma.mma_async.sync.aligned.m64n8k16.f32." TY "." TY " {" \
             "%0, %1, %2, %3"                                            \
             "}, %4, %5, p, 1, 1, 0, 0;\n}\n"                            \
             : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])            \
             : "l"(da), "l"(db), "r"(1))

#define GT_WGMMA_N16(TY)                                                  \
asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"                 \
             "wgmma.mma_async.sync.aligned.m64n16k16.f32." TY "." TY " {" \
             "%0, %1, %2, %3, %4, %5, %6, %7"                             \
             "}, %8, %9, p, 1, 1, 0, 0;\n}\n"                             \
             : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]),            \
               "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])             \
             : "l"(da), "l"(db), "r"(1))

#define GT_WGMMA_N32(TY)                                                            \
asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"                           \
             "wgmma.mma_async.sync.aligned.m64n32k16.f32." TY "." TY " {"           \
             "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15" \
             "}, %16, %17, p, 1, 1, 0, 0;\n}\n"                                     \
             : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]),                      \
               "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),                      \
               "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),                    \
               "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])                   \
             : "l"(da), "l"(db), "r"(1))

#define GT_WGMMA_N64(TY)                                                              \
asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                             \
             "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {"             \
             "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
             "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, " \
             "%30, %31"                                                               \
             "}, %32, %33, p, 1, 1, 0, 0;\n}\n"                                       \
             : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]),                        \
               "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),                        \
               "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),                      \
               "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),                    \
               "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),                    \
               "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),                    \
               "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),                    \
               "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])                     \
             : "l"(da), "l"(db), "r"(1))

#define GT_WGMMA_N128(TY)                                                             \
asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                             \
             "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {"            \
             "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
             "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, " \
             "%30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, " \
             "%44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, " \
             "%58, %59, %60, %61, %62, %63"                                           \
             "}, %64, %65, p, 1, 1, 0, 0;\n}\n"                                       \
             : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]),                        \
               "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),                        \
               "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),                      \
               "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),                    \
               "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),                    \
               "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),                    \
               "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),                    \
               "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),                    \
               "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),                    \
               "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),                    \
               "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),                    \
               "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),                    \
               "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]),                    \
               "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),                    \
               "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),                    \
               "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])                     \
             : "l"(da), "l"(db), "r"(1))

#define GT_WGMMA_SS(T, TY, N)                                                          \
  template <> struct wgmma_ss<T, N> {                                                  \
    static __device__ __forceinline__ void mma(float(&d)[N / 2], uint64_t da,          \
                                               uint64_t db) {                          \
      GT_WGMMA_N##N(TY);                                                               \
    }                                                                                  \
  };

GT_WGMMA_SS(bf16, "bf16", 8)
GT_WGMMA_SS(f16, "f16", 8)
GT_WGMMA_SS(bf16, "bf16", 16)
GT_WGMMA_SS(f16, "f16", 16)
GT_WGMMA_SS(bf16, "bf16", 32)
GT_WGMMA_SS(f16, "f16", 32)
GT_WGMMA_SS(bf16, "bf16", 64)
GT_WGMMA_SS(f16, "f16", 64)
GT_WGMMA_SS(bf16, "bf16", 128)
GT_WGMMA_SS(f16, "f16", 128)

#undef GT_WGMMA_SS

}  // namespace gtk
