// A host emulation of the device API (device.hpp), for testing the CUDA backend on machines with
// no GPU. It replaces device.cu's platform layer only:
//   memory       malloc'ed host buffers;
//   launches     platform::for_each runs the SAME element functors (element_ops.hpp) in a loop;
//   GEMM         a reference implementation of cuBLAS's column-major GemmEx/StridedBatchedEx
//                contract (op(A), leading dimensions, batch strides) on the GemmPlan that
//                device_api.inl builds: operands widened to fp32 (TF32: rounded to 10 explicit
//                mantissa bits first) or fp64, summed in that type, alpha applied, rounded once
//                to the output type;
//   sum_squares  the device's fixed summation order (ops::fixed_order_sum_squares).
// Everything above the platform layer (device_api.inl, cuda_ops.hpp, cuda_backend.cpp and
// ns_algorithm.hpp) is the production code. So the GPU tests run here check the backend's logic:
// orientation and strides of every product, normalization semantics, transposes, batching,
// sharding, zero sizes; what they cannot check is CUDA itself (launch configurations, the
// kernels' indexing on the device, cuBLAS's behaviour), which tools/gpu/run_gpu_checks.sh does.
#include <Eigen/Core>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "device.hpp"
#include "element_ops.hpp"

namespace nsv::cuda {

const DeviceInfo& probe_device() {
  static const DeviceInfo info = [] {
    DeviceInfo d;
    d.usable = true;
    d.device = -1;
    d.name = "host emulation of the CUDA device API (no GPU)";
    return d;
  }();
  return info;
}

Buffer::Buffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  // 256-byte alignment, as cudaMalloc gives.
  ptr_ = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!ptr_) throw std::runtime_error("emulated device: out of memory");
  // Fresh device memory is garbage: make that visible to any test that reads it unwritten.
  std::memset(ptr_, 0xA5, bytes);
}
Buffer::~Buffer() { std::free(ptr_); }
Buffer::Buffer(Buffer&& other) noexcept : ptr_(other.ptr_), bytes_(other.bytes_) {
  other.ptr_ = nullptr;
  other.bytes_ = 0;
}
Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    std::free(ptr_);
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    other.ptr_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}
Buffer Buffer::clone() const {
  Buffer out(bytes_);
  if (bytes_) std::memcpy(out.ptr_, ptr_, bytes_);
  return out;
}

void upload(Buffer& dst, const void* host, std::size_t bytes) {
  if (bytes > dst.bytes()) throw std::logic_error("upload: more bytes than the buffer holds");
  if (bytes) std::memcpy(dst.data(), host, bytes);
}
void download(void* host, const Buffer& src, std::size_t bytes) {
  if (bytes > src.bytes()) throw std::logic_error("download: more bytes than the buffer holds");
  if (bytes) std::memcpy(host, src.data(), bytes);
}
void synchronize() {}

Blas::Blas(Fp32Math fp32_math) : fp32_math_(fp32_math) {}
Blas::~Blas() = default;

namespace {

// fp32 -> TF32 (10 explicit mantissa bits), round to nearest, ties away from zero (PTX
// cvt.rna.tf32.f32); Inf and NaN unchanged.
float to_tf32(float v) {
  auto bits = std::bit_cast<std::uint32_t>(v);
  if ((bits & 0x7f800000u) == 0x7f800000u) return v;
  bits += 0x1000u;
  bits &= 0xffffe000u;
  return std::bit_cast<float>(bits);
}

template <class S>
float load(const void* p, std::int64_t i) {
  return ops::F32Storage<S>::load(static_cast<const S*>(p)[i]);
}

// cuBLAS's contract on one batch member: C(i,j) = alpha * sum_l op(A)(i,l) B(l,j), column-major,
// op(A)(i,l) = A[i + l*lda] (N) or A[l + i*lda] (T), B(l,j) = B[l + j*ldb], C(i,j) at i + j*ldc.
template <class S>
void gemm_f32(const GemmPlan& p, bool tf32, float alpha, std::int64_t b) {
  using MatCF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
  const std::int64_t oa = b * p.stride_a, ob = b * p.stride_b, oc = b * p.stride_c;
  MatCF a(p.M, p.K), bb(p.K, p.N);
  for (std::int64_t i = 0; i < p.M; ++i)
    for (std::int64_t l = 0; l < p.K; ++l) {
      const float v = load<S>(p.A, oa + (p.trans_a ? l + i * p.lda : i + l * p.lda));
      a(i, l) = tf32 ? to_tf32(v) : v;
    }
  for (std::int64_t l = 0; l < p.K; ++l)
    for (std::int64_t j = 0; j < p.N; ++j) {
      const float v = load<S>(p.B, ob + l + j * p.ldb);
      bb(l, j) = tf32 ? to_tf32(v) : v;
    }
  const MatCF acc = a * bb;  // summed in fp32
  S* c = static_cast<S*>(p.C) + oc;
  for (std::int64_t i = 0; i < p.M; ++i)
    for (std::int64_t j = 0; j < p.N; ++j) c[i + j * p.ldc] = ops::F32Storage<S>::store(ops::mul_rn(alpha, acc(i, j)));
}

void gemm_f64(const GemmPlan& p, double alpha, std::int64_t b) {
  using MatCD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
  const auto* A = static_cast<const double*>(p.A) + b * p.stride_a;
  const auto* B = static_cast<const double*>(p.B) + b * p.stride_b;
  MatCD a(p.M, p.K), bb(p.K, p.N);
  for (std::int64_t i = 0; i < p.M; ++i)
    for (std::int64_t l = 0; l < p.K; ++l) a(i, l) = p.trans_a ? A[l + i * p.lda] : A[i + l * p.lda];
  for (std::int64_t l = 0; l < p.K; ++l)
    for (std::int64_t j = 0; j < p.N; ++j) bb(l, j) = B[l + j * p.ldb];
  const MatCD acc = a * bb;
  double* c = static_cast<double*>(p.C) + b * p.stride_c;
  for (std::int64_t i = 0; i < p.M; ++i)
    for (std::int64_t j = 0; j < p.N; ++j) c[i + j * p.ldc] = ops::mul_rn(alpha, acc(i, j));
}

}  // namespace

namespace platform {

template <class F>
void for_each(std::int64_t n, const F& f) {
  for (std::int64_t i = 0; i < n; ++i) f(i);
}

void copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
}

void zero(void* dst, std::size_t bytes) {
  if (bytes) std::memset(dst, 0, bytes);
}

void gemm(void*, const GemmPlan& p, Elem e, Fp32Math fp32_math, double alpha) {
  // cuBLAS's own argument rules, which a wrong plan would break.
  if (p.lda < (p.trans_a ? p.K : p.M) || p.ldb < p.K || p.ldc < p.M || p.M <= 0 || p.N <= 0 || p.K <= 0 || p.batch <= 0)
    throw std::logic_error("emulated cuBLAS: invalid GEMM arguments (CUBLAS_STATUS_INVALID_VALUE)");
  for (std::int64_t b = 0; b < p.batch; ++b) {
    switch (e) {
      case Elem::f64:
        gemm_f64(p, alpha, b);
        break;
      case Elem::f32:
        gemm_f32<float>(p, fp32_math == Fp32Math::tf32, static_cast<float>(alpha), b);
        break;
      case Elem::bf16:
        gemm_f32<__nv_bfloat16>(p, false, static_cast<float>(alpha), b);
        break;
      case Elem::f16:
        gemm_f32<__half>(p, false, static_cast<float>(alpha), b);
        break;
    }
  }
}

}  // namespace platform

void sum_squares(const void* in, bool in_f64, std::int64_t per_matrix, std::int64_t batch, double* sums_host) {
  for (std::int64_t b = 0; b < batch; ++b)
    sums_host[b] = in_f64 ? ops::fixed_order_sum_squares(static_cast<const double*>(in) + b * per_matrix, per_matrix)
                          : ops::fixed_order_sum_squares(static_cast<const float*>(in) + b * per_matrix, per_matrix);
}

Timer::Timer() = default;
Timer::~Timer() = default;
void Timer::start() {
  begin_ =
      reinterpret_cast<void*>(static_cast<std::uintptr_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
}
double Timer::stop_ms() {
  const auto now = static_cast<std::uintptr_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return static_cast<double>(now - reinterpret_cast<std::uintptr_t>(begin_)) * 1e-6;
}

}  // namespace nsv::cuda

#include "../device_api.inl"
