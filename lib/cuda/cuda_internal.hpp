#pragma once
// The CUDA backend's pipeline, exposed for its own tests and the GPU benchmark (not part of the
// public API): upload, normalization on the device, the iteration, download.
#include <cstdint>
#include <vector>

#include "cuda_ops.hpp"
#include "nsv/cuda_backend.hpp"
#include "nsv/kernels.hpp"

namespace nsv::cuda_detail {

// The matrices of one group (same shape), each transposed when `transpose`, on the device in the
// normalization dtype's carrier: double for fp64, else float holding values rounded to `nd`
// (double -> float rounding on the host, float -> bf16/fp16 on the device), back to back.
struct Carrier {
  cuda::Buffer buf;
  std::int64_t rows = 0, cols = 0, count = 0;
  bool f64 = false;
};
Carrier upload_carrier(const std::vector<const MatD*>& mats, bool transpose, DType nd);

// Each matrix's sum of squares, on the device, in double, in a fixed order (see device.hpp).
std::vector<double> sums_of_squares(const Carrier&);

// Matrix b of the carrier divided by den[b], in nd's arithmetic, rounded to cfg.dtype.
DeviceMatrix divide(const Carrier&, const std::vector<double>& den, const NsConfig& cfg);

// The whole kernel on a group of same-shape matrices: normalization, the iteration the kernel
// chooses (gram loop only when the Gram matrix is the smaller side), transposes as in the CPU
// reference. One GEMM call per product for the whole group.
std::vector<MatD> newton_schulz_group(cuda::Blas&, const std::vector<const MatD*>& mats, const NsConfig& cfg);

// --- for the benchmark ---------------------------------------------------------------------------
// Device time (CUDA events) of NS of g with the input already on the device: normalization plus
// iteration, `repeats` timed runs after `warmup` untimed ones. Also returns the last result.
struct DeviceNsTiming {
  std::vector<double> ms;
  MatD result;
};
DeviceNsTiming time_device_ns(const CudaOptions&, const MatD& g, const NsConfig& cfg, int warmup, int repeats);

// Device time of one row-major m x k by k x n GEMM in dtype d (cuBLAS as the backend calls it),
// on uniform random operands in [-1, 1], per timed call.
std::vector<double> time_gemm_ms(const CudaOptions&, DType d, std::int64_t m, std::int64_t n, std::int64_t k,
                                 int warmup, int repeats);

}  // namespace nsv::cuda_detail
