// The CUDA platform of the device API (device.hpp): CUDA runtime memory and launches, cuBLAS,
// the device probe, the sum-of-squares reduction and the timer. The shared part (dispatch and
// element formulas) is device_api.inl with element_ops.hpp, which the host emulation of the
// tests runs as well.
//
// Floating point: this file is compiled with --fmad=false, and every arithmetic operation in a
// kernel is an explicitly rounded intrinsic (element_ops.hpp: __fmul_rn, __fadd_rn, __fdiv_rn and
// their double forms), which the compiler never contracts into an FMA whatever the flags: each
// operation rounds once, as the CPU reference (built with -ffp-contract=off) and PyTorch's
// separate elementwise kernels do. Conversions to bf16/fp16 are the _rn (round to nearest even)
// intrinsics, which overflow to +-Inf and keep NaN, as Eigen's conversions on the CPU side do.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "device.hpp"
#include "element_ops.hpp"

namespace nsv::cuda {
namespace {

[[noreturn]] void throw_cuda(cudaError_t e, const char* call, int line) {
  throw std::runtime_error(std::string("CUDA error: ") + call + " failed (device.cu:" + std::to_string(line) +
                           "): " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}
[[noreturn]] void throw_cublas(cublasStatus_t s, const char* call, int line) {
  throw std::runtime_error(std::string("cuBLAS error: ") + call + " failed (device.cu:" + std::to_string(line) +
                           "): " + cublasGetStatusName(s) + ": " + cublasGetStatusString(s));
}

#define NSV_CUDA_CHECK(call)                                        \
  do {                                                              \
    const cudaError_t nsv_e_ = (call);                              \
    if (nsv_e_ != cudaSuccess) throw_cuda(nsv_e_, #call, __LINE__); \
  } while (0)
#define NSV_CUBLAS_CHECK(call)                                                  \
  do {                                                                          \
    const cublasStatus_t nsv_s_ = (call);                                       \
    if (nsv_s_ != CUBLAS_STATUS_SUCCESS) throw_cublas(nsv_s_, #call, __LINE__); \
  } while (0)
// After a kernel launch: a bad configuration or a missing kernel image shows here; faults during
// execution show at the next synchronizing call (which also throws).
#define NSV_LAUNCH_CHECK() NSV_CUDA_CHECK(cudaGetLastError())

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = std::int64_t{1} << 20;  // grid-stride loops cover the rest

unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
}

__device__ __forceinline__ std::int64_t first_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

// --- kernels -------------------------------------------------------------------------------------

__global__ void probe_kernel(int* out) { *out = 42; }

// f(i) for every i in [0, n), grid-stride.
template <class F>
__global__ void for_each_kernel(F f, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) f(i);
}

// Sum of squares, pass 1: block `blk` (of chunks_per * batch) sums chunk blk % chunks_per of
// matrix blk / chunks_per. Each thread sums its elements in increasing index order, then the
// block combines the threads' sums by a fixed pairwise tree. Everything in double: a float's
// square is exact in double; a double's square rounds once.
using ops::kSumChunk;
using ops::kSumThreads;

template <class V>
__global__ void chunk_sum_squares(const V* in, std::int64_t per_matrix, std::int64_t chunks_per, std::int64_t batch,
                                  double* partial) {
  __shared__ double sh[kSumThreads];
  const int t = threadIdx.x;
  const std::int64_t blocks = chunks_per * batch;
  for (std::int64_t blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
    const std::int64_t b = blk / chunks_per, c = blk % chunks_per;
    const V* base = in + b * per_matrix;
    const std::int64_t lo = c * kSumChunk, hi = lo + kSumChunk < per_matrix ? lo + kSumChunk : per_matrix;
    double s = 0.0;
    for (std::int64_t i = lo + t; i < hi; i += kSumThreads) {
      const double v = static_cast<double>(base[i]);
      s = ops::add_rn(s, ops::mul_rn(v, v));
    }
    sh[t] = s;
    __syncthreads();
    for (int w = kSumThreads / 2; w > 0; w >>= 1) {
      if (t < w) sh[t] = ops::add_rn(sh[t], sh[t + w]);
      __syncthreads();
    }
    if (t == 0) partial[blk] = sh[0];
    __syncthreads();  // sh is reused by this block's next chunk
  }
}

// Pass 2: block b sums matrix b's chunk sums the same way.
__global__ void final_sums(const double* partial, std::int64_t chunks_per, std::int64_t batch, double* sums) {
  __shared__ double sh[kSumThreads];
  const int t = threadIdx.x;
  for (std::int64_t b = blockIdx.x; b < batch; b += gridDim.x) {
    double s = 0.0;
    for (std::int64_t i = t; i < chunks_per; i += kSumThreads) s = ops::add_rn(s, partial[b * chunks_per + i]);
    sh[t] = s;
    __syncthreads();
    for (int w = kSumThreads / 2; w > 0; w >>= 1) {
      if (t < w) sh[t] = ops::add_rn(sh[t], sh[t + w]);
      __syncthreads();
    }
    if (t == 0) sums[b] = sh[0];
    __syncthreads();
  }
}

// --- cuBLAS type tables --------------------------------------------------------------------------

cudaDataType_t data_type(Elem e) {
  switch (e) {
    case Elem::f64:
      return CUDA_R_64F;
    case Elem::f32:
      return CUDA_R_32F;
    case Elem::bf16:
      return CUDA_R_16BF;
    case Elem::f16:
      return CUDA_R_16F;
  }
  throw std::logic_error("data_type: bad Elem");
}

int checked_int(std::int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int>::max())
    throw std::invalid_argument(std::string("CUDA backend: ") + what + " = " + std::to_string(v) +
                                " exceeds cuBLAS's int range");
  return static_cast<int>(v);
}

}  // namespace

// --- device probe ----------------------------------------------------------------------------------

namespace {

std::string runtime_message(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}

DeviceInfo probe_once() {
  DeviceInfo d;
  cudaRuntimeGetVersion(&d.runtime_version);
  if (cudaDriverGetVersion(&d.driver_version) != cudaSuccess) d.driver_version = 0;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the (non-sticky) error
    d.why_not = "no CUDA device: cudaGetDeviceCount reports " + runtime_message(e);
    if (d.driver_version == 0) d.why_not += "; no NVIDIA driver is loaded on this machine";
    return d;
  }
  if (count == 0) {
    d.why_not = "no CUDA device: the NVIDIA driver reports 0 devices (check CUDA_VISIBLE_DEVICES)";
    return d;
  }
  cudaDeviceProp prop{};
  if (const cudaError_t pe = cudaGetDeviceProperties(&prop, 0); pe != cudaSuccess) {
    cudaGetLastError();
    d.why_not = "no CUDA device: cudaGetDeviceProperties(0) reports " + runtime_message(pe);
    return d;
  }
  d.device = 0;
  d.name = prop.name;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.sm_count = prop.multiProcessorCount;
  d.total_memory = prop.totalGlobalMem;
  const std::string which = "CUDA device 0 (" + d.name + ", compute capability " + std::to_string(d.cc_major) + "." +
                            std::to_string(d.cc_minor) + ")";
  if (d.cc_major < 8) {
    d.why_not = "no usable CUDA device: " + which +
                " is older than 8.0; the CUDA backend needs bf16 GEMMs and carries code for sm_80 and sm_90 only";
    return d;
  }
  if (const cudaError_t se = cudaSetDevice(0); se != cudaSuccess) {
    cudaGetLastError();
    d.why_not = "no usable CUDA device: cudaSetDevice(0) on " + which + " reports " + runtime_message(se);
    return d;
  }
  // A trivial kernel of this build: proves the fat binary carries code the driver can load.
  int* flag = nullptr;
  int host_flag = 0;
  cudaError_t ke = cudaMalloc(&flag, sizeof(int));
  if (ke == cudaSuccess) {
    probe_kernel<<<1, 1>>>(flag);
    ke = cudaGetLastError();
    if (ke == cudaSuccess) ke = cudaMemcpy(&host_flag, flag, sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(flag);
  }
  if (ke != cudaSuccess || host_flag != 42) {
    cudaGetLastError();
    d.why_not = "no usable CUDA device: " + which + " cannot run this build's kernels: " +
                (ke != cudaSuccess ? runtime_message(ke) : std::string("the probe kernel wrote nothing"));
    return d;
  }
  cublasHandle_t h = nullptr;
  if (const cublasStatus_t bs = cublasCreate(&h); bs != CUBLAS_STATUS_SUCCESS) {
    d.why_not = "no usable CUDA device: cuBLAS cannot start on " + which + ": " + cublasGetStatusName(bs) + " (" +
                cublasGetStatusString(bs) + ")";
    return d;
  }
  cublasGetVersion(h, &d.cublas_version);
  cublasDestroy(h);
  d.usable = true;
  return d;
}

}  // namespace

const DeviceInfo& probe_device() {
  static const DeviceInfo info = probe_once();  // thread-safe one-time initialization
  return info;
}

// --- memory ----------------------------------------------------------------------------------------

Buffer::Buffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t e = cudaMalloc(&ptr_, bytes);
  if (e != cudaSuccess) {
    ptr_ = nullptr;
    cudaGetLastError();
    throw std::runtime_error("CUDA backend: cudaMalloc of " + std::to_string(bytes) +
                             " bytes failed: " + runtime_message(e));
  }
}

Buffer::~Buffer() {
  if (ptr_) cudaFree(ptr_);  // errors ignored: a destructor must not throw
}

Buffer::Buffer(Buffer&& other) noexcept : ptr_(other.ptr_), bytes_(other.bytes_) {
  other.ptr_ = nullptr;
  other.bytes_ = 0;
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    other.ptr_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

Buffer Buffer::clone() const {
  Buffer out(bytes_);
  if (bytes_) NSV_CUDA_CHECK(cudaMemcpy(out.ptr_, ptr_, bytes_, cudaMemcpyDeviceToDevice));
  return out;
}

void upload(Buffer& dst, const void* host, std::size_t bytes) {
  if (bytes > dst.bytes()) throw std::logic_error("upload: more bytes than the buffer holds");
  if (bytes) NSV_CUDA_CHECK(cudaMemcpy(dst.data(), host, bytes, cudaMemcpyHostToDevice));
}

void download(void* host, const Buffer& src, std::size_t bytes) {
  if (bytes > src.bytes()) throw std::logic_error("download: more bytes than the buffer holds");
  if (bytes) NSV_CUDA_CHECK(cudaMemcpy(host, src.data(), bytes, cudaMemcpyDeviceToHost));
}

void synchronize() { NSV_CUDA_CHECK(cudaDeviceSynchronize()); }

// --- cuBLAS ----------------------------------------------------------------------------------------

Blas::Blas(Fp32Math fp32_math) : fp32_math_(fp32_math) {
  cublasHandle_t h = nullptr;
  NSV_CUBLAS_CHECK(cublasCreate(&h));
  handle_ = h;
  try {
    NSV_CUBLAS_CHECK(cublasSetStream(h, nullptr));  // the legacy default stream: issue order = execution order
    NSV_CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    NSV_CUBLAS_CHECK(cublasSetAtomicsMode(h, CUBLAS_ATOMICS_NOT_ALLOWED));
    const int base = fp32_math == Fp32Math::tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
    NSV_CUBLAS_CHECK(
        cublasSetMathMode(h, static_cast<cublasMath_t>(base | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
  } catch (...) {
    cublasDestroy(h);
    throw;
  }
}

Blas::~Blas() {
  if (handle_) cublasDestroy(static_cast<cublasHandle_t>(handle_));
}

// --- the platform primitives of device_api.inl ------------------------------------------------------

namespace platform {

template <class F>
void for_each(std::int64_t n, const F& f) {
  if (n == 0) return;
  for_each_kernel<<<blocks_for(n), kThreads>>>(f, n);
  NSV_LAUNCH_CHECK();
}

void copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes) NSV_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
}

void zero(void* dst, std::size_t bytes) {
  if (bytes) NSV_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, nullptr));
}

// One cuBLAS call for the plan (see plan_row_major_gemm in device.hpp for the row-major to
// column-major translation): cublasGemmEx for one matrix, cublasGemmStridedBatchedEx for a batch.
void gemm(void* handle, const GemmPlan& p, Elem e, Fp32Math fp32_math, double alpha) {
  const int M = checked_int(p.M, "M"), N = checked_int(p.N, "N"), K = checked_int(p.K, "K");
  const int lda = checked_int(p.lda, "lda"), ldb = checked_int(p.ldb, "ldb"), ldc = checked_int(p.ldc, "ldc");
  const cublasOperation_t op_a = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cudaDataType_t t = data_type(e);
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  if (e == Elem::f64)
    compute = CUBLAS_COMPUTE_64F;
  else if (e == Elem::f32 && fp32_math == Fp32Math::tf32)
    compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  // alpha and beta have the compute type's scalar type (host pointers: CUBLAS_POINTER_MODE_HOST).
  const double alpha_d = alpha, beta_d = 0.0;
  const float alpha_f = static_cast<float>(alpha), beta_f = 0.0f;
  const void* alpha_p = e == Elem::f64 ? static_cast<const void*>(&alpha_d) : static_cast<const void*>(&alpha_f);
  const void* beta_p = e == Elem::f64 ? static_cast<const void*>(&beta_d) : static_cast<const void*>(&beta_f);
  auto h = static_cast<cublasHandle_t>(handle);
  if (p.batch == 1) {
    NSV_CUBLAS_CHECK(cublasGemmEx(h, op_a, CUBLAS_OP_N, M, N, K, alpha_p, p.A, t, lda, p.B, t, ldb, beta_p, p.C, t, ldc,
                                  compute, CUBLAS_GEMM_DEFAULT));
  } else {
    NSV_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        h, op_a, CUBLAS_OP_N, M, N, K, alpha_p, p.A, t, lda, static_cast<long long>(p.stride_a), p.B, t, ldb,
        static_cast<long long>(p.stride_b), beta_p, p.C, t, ldc, static_cast<long long>(p.stride_c),
        checked_int(p.batch, "batch"), compute, CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace platform

void sum_squares(const void* in, bool in_f64, std::int64_t per_matrix, std::int64_t batch, double* sums_host) {
  if (batch == 0) return;
  if (per_matrix == 0) {
    std::fill(sums_host, sums_host + batch, 0.0);
    return;
  }
  const std::int64_t chunks_per = (per_matrix + kSumChunk - 1) / kSumChunk;
  Buffer partial(static_cast<std::size_t>(chunks_per * batch) * sizeof(double));
  Buffer sums(static_cast<std::size_t>(batch) * sizeof(double));
  const auto grid1 = static_cast<unsigned>(std::min<std::int64_t>(chunks_per * batch, kMaxBlocks));
  if (in_f64)
    chunk_sum_squares<<<grid1, kSumThreads>>>(static_cast<const double*>(in), per_matrix, chunks_per, batch,
                                              static_cast<double*>(partial.data()));
  else
    chunk_sum_squares<<<grid1, kSumThreads>>>(static_cast<const float*>(in), per_matrix, chunks_per, batch,
                                              static_cast<double*>(partial.data()));
  NSV_LAUNCH_CHECK();
  const auto grid2 = static_cast<unsigned>(std::min<std::int64_t>(batch, kMaxBlocks));
  final_sums<<<grid2, kSumThreads>>>(static_cast<const double*>(partial.data()), chunks_per, batch,
                                     static_cast<double*>(sums.data()));
  NSV_LAUNCH_CHECK();
  download(sums_host, sums, static_cast<std::size_t>(batch) * sizeof(double));
}

// --- timing ----------------------------------------------------------------------------------------

Timer::Timer() {
  cudaEvent_t b = nullptr, e = nullptr;
  NSV_CUDA_CHECK(cudaEventCreate(&b));
  if (const cudaError_t err = cudaEventCreate(&e); err != cudaSuccess) {
    cudaEventDestroy(b);
    throw_cuda(err, "cudaEventCreate", __LINE__);
  }
  begin_ = b;
  end_ = e;
}

Timer::~Timer() {
  if (begin_) cudaEventDestroy(static_cast<cudaEvent_t>(begin_));
  if (end_) cudaEventDestroy(static_cast<cudaEvent_t>(end_));
}

void Timer::start() { NSV_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(begin_), nullptr)); }

double Timer::stop_ms() {
  NSV_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(end_), nullptr));
  NSV_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(end_)));
  float ms = 0.0f;
  NSV_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(begin_), static_cast<cudaEvent_t>(end_)));
  return static_cast<double>(ms);
}

}  // namespace nsv::cuda

#include "device_api.inl"
