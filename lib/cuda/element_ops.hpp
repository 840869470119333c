#pragma once
// Per-element operations of the CUDA backend's kernels, written once for the device (nvcc,
// device.cu) and for the host emulation of the device API (g++, tests/emulated_device.cpp), so
// the formulas the GPU runs are the formulas the CPU-only tests check.
//
// Every arithmetic operation rounds once: on the device through the explicitly rounded
// intrinsics (__fmul_rn, __fadd_rn, __fdiv_rn and double forms), which the compiler never
// contracts into an FMA; on the host through plain operators in a translation unit built with
// -ffp-contract=off. bf16/fp16 values are computed in fp32 and rounded to nearest even
// (__float2bfloat16_rn / __float2half_rn, which have host implementations too).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__CUDACC__)
#define NSV_HD __host__ __device__ __forceinline__
#else
#define NSV_HD inline
#endif

namespace nsv::cuda::ops {

// --- explicitly rounded arithmetic ---------------------------------------------------------------
NSV_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
NSV_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
NSV_HD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
NSV_HD double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
NSV_HD double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
NSV_HD double div_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

// --- storage types with fp32 arithmetic --------------------------------------------------------
template <class S>
struct F32Storage;
template <>
struct F32Storage<float> {
  static NSV_HD float load(float v) { return v; }
  static NSV_HD float store(float v) { return v; }
};
template <>
struct F32Storage<__nv_bfloat16> {
  static NSV_HD float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  static NSV_HD __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};
template <>
struct F32Storage<__half> {
  static NSV_HD float load(__half v) { return __half2float(v); }
  static NSV_HD __half store(float v) { return __float2half_rn(v); }
};
template <class S>
NSV_HD float round_as(float v) {
  return F32Storage<S>::load(F32Storage<S>::store(v));
}

// --- element functors: f(i) for i in [0, n) -------------------------------------------------------

// out = round(round(a * x) + p)  (PyTorch's `a * X + P`, fp32 opmath for 16-bit storage)
template <class S>
struct LincombF32 {
  float a;
  const S* x;
  const S* p;
  S* out;
  NSV_HD void operator()(std::int64_t i) const {
    const float ax = round_as<S>(mul_rn(a, F32Storage<S>::load(x[i])));
    out[i] = F32Storage<S>::store(add_rn(ax, F32Storage<S>::load(p[i])));
  }
};
struct LincombF64 {
  double a;
  const double* x;
  const double* p;
  double* out;
  NSV_HD void operator()(std::int64_t i) const { out[i] = add_rn(mul_rn(a, x[i]), p[i]); }
};

// out = round(a * x)  (PyTorch's `a * X`)
template <class S>
struct ScaleF32 {
  float a;
  const S* x;
  S* out;
  NSV_HD void operator()(std::int64_t i) const { out[i] = F32Storage<S>::store(mul_rn(a, F32Storage<S>::load(x[i]))); }
};
struct ScaleF64 {
  double a;
  const double* x;
  double* out;
  NSV_HD void operator()(std::int64_t i) const { out[i] = mul_rn(a, x[i]); }
};

// t in [0, n*batch): Z[b][i][i] = round(Z[b][i][i] + a), b = t / n, i = t % n.
template <class S>
struct AddDiagonalF32 {
  S* z;
  float a;
  std::int64_t n;
  NSV_HD void operator()(std::int64_t t) const {
    const std::int64_t b = t / n, i = t % n;
    S* zi = z + b * n * n + i * n + i;
    *zi = F32Storage<S>::store(add_rn(F32Storage<S>::load(*zi), a));
  }
};
struct AddDiagonalF64 {
  double* z;
  double a;
  std::int64_t n;
  NSV_HD void operator()(std::int64_t t) const {
    const std::int64_t b = t / n, i = t % n;
    double* zi = z + b * n * n + i * n + i;
    *zi = add_rn(*zi, a);
  }
};

// t in [0, n*n*batch): bit copy of C[b][j][i] onto C[b][i][j] for i > j. Only strictly upper
// elements are read and only strictly lower ones written: no two threads touch one element.
template <class U>
struct MirrorUpper {
  U* c;
  std::int64_t n;
  NSV_HD void operator()(std::int64_t t) const {
    const std::int64_t nn = n * n, b = t / nn, r = t % nn, i = r / n, j = r % n;
    if (i > j) c[b * nn + i * n + j] = c[b * nn + j * n + i];
  }
};

template <class S>
struct F32ToStorage {
  const float* in;
  S* out;
  NSV_HD void operator()(std::int64_t i) const { out[i] = F32Storage<S>::store(in[i]); }
};
template <class S>
struct StorageToF32 {
  const S* in;
  float* out;
  NSV_HD void operator()(std::int64_t i) const { out[i] = F32Storage<S>::load(in[i]); }
};
template <class S>
struct RoundInplace {
  float* x;
  NSV_HD void operator()(std::int64_t i) const { x[i] = round_as<S>(x[i]); }
};

// Normalization's division, matrix b = i / per_matrix with its own denominator.
struct DivideF64 {
  const double* in;
  const double* den;
  double* out;
  std::int64_t per_matrix;
  NSV_HD void operator()(std::int64_t i) const { out[i] = div_rn(in[i], den[i / per_matrix]); }
};
// q = round_ND(x / den) in fp32 (ND: the normalization dtype's storage), stored as S.
template <class ND, class S>
struct DivideF32 {
  const float* in;
  const float* den;
  S* out;
  std::int64_t per_matrix;
  NSV_HD void operator()(std::int64_t i) const {
    out[i] = F32Storage<S>::store(round_as<ND>(div_rn(in[i], den[i / per_matrix])));
  }
};

// --- the fixed summation order of sum_squares (device.hpp) -----------------------------------------
// Matrix b is cut into chunks of kSumChunk elements; in a chunk, "thread" t sums elements
// t, t + kSumThreads, ... in increasing order, then the kSumThreads partial sums are combined by
// the pairwise tree s[t] += s[t + w] for w = kSumThreads/2, ..., 1; the chunks' sums are combined
// the same way (thread t sums chunks t, t + kSumThreads, ..., then the tree).
inline constexpr int kSumThreads = 256;
inline constexpr std::int64_t kSumChunk = std::int64_t{kSumThreads} * 32;

// That order on the host, one matrix of n values (V = float or double): the device's result bit
// for bit. Used by the host emulation and by the GPU test that checks the device kernels.
template <class V>
double fixed_order_sum_squares(const V* x, std::int64_t n) {
  auto tree = [](double* s) {
    for (int w = kSumThreads / 2; w > 0; w >>= 1)
      for (int t = 0; t < w; ++t) s[t] = add_rn(s[t], s[t + w]);
    return s[0];
  };
  if (n == 0) return 0.0;
  const std::int64_t chunks = (n + kSumChunk - 1) / kSumChunk;
  double sh[kSumThreads];
  std::vector<double> partial(static_cast<std::size_t>(chunks));
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t lo = c * kSumChunk, hi = lo + kSumChunk < n ? lo + kSumChunk : n;
    for (int t = 0; t < kSumThreads; ++t) {
      double s = 0.0;
      for (std::int64_t i = lo + t; i < hi; i += kSumThreads) {
        const double v = static_cast<double>(x[i]);
        s = add_rn(s, mul_rn(v, v));
      }
      sh[t] = s;
    }
    partial[static_cast<std::size_t>(c)] = tree(sh);
  }
  for (int t = 0; t < kSumThreads; ++t) {
    double s = 0.0;
    for (std::int64_t i = t; i < chunks; i += kSumThreads) s = add_rn(s, partial[static_cast<std::size_t>(i)]);
    sh[t] = s;
  }
  return tree(sh);
}

}  // namespace nsv::cuda::ops
