#pragma once
// The thin C++ layer over the CUDA runtime and cuBLAS that the CUDA backend is built on.
//
// This header is deliberately free of Eigen and of CUDA headers: it is included by the .cu file
// (compiled by nvcc) and by the backend's .cpp files (compiled by g++ with Eigen), so neither
// compiler ever sees the other's world. Everything here works on raw device buffers of one of
// four element types, all matrices ROW-MAJOR (numpy's C order, as in the rest of nsverify); the
// translation to cuBLAS's column-major convention happens in exactly one place,
// plan_row_major_gemm below.
//
// Implementations: device.cu (the GPU) and tests/emulated_device.cpp (a host emulation for
// machines without one); both share device_api.inl and the element formulas of element_ops.hpp.
//
// Ordering: every operation is issued on the legacy default stream of the current device, so
// operations execute in issue order and a host copy (`download`) sees everything issued before
// it. The backend serializes its calls with a mutex; nothing here is meant to be used from two
// host threads at once.
//
// Errors: every CUDA and cuBLAS status is checked; a failure throws std::runtime_error naming the
// call, the status and the source line. Destructors never throw.
#include <cstddef>
#include <cstdint>
#include <string>

namespace nsv::cuda {

// Element type of a device buffer. f32 also serves as the carrier of fp32/TF32 compute; bf16 and
// f16 are storage types whose arithmetic happens in fp32 (cuBLAS compute type 32F, and fp32
// opmath in the elementwise kernels, as PyTorch does).
enum class Elem { f64, f32, bf16, f16 };
std::size_t elem_size(Elem);
const char* elem_name(Elem);

// What the driver says about the device this process would use. Never throws.
struct DeviceInfo {
  bool usable = false;
  std::string why_not;  // set when !usable: "no CUDA device: ..." and the runtime's message
  int device = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::size_t total_memory = 0;
  int runtime_version = 0, driver_version = 0;  // e.g. 13000
  int cublas_version = 0;
};
// Probes once (device 0 of what CUDA_VISIBLE_DEVICES exposes): a device must exist, have compute
// capability >= 8.0 (bf16 GEMMs, and the oldest architecture this build carries code for), run a
// trivial kernel of this build (proves the fat binary has code the driver can load) and create a
// cuBLAS handle. The result is cached for the life of the process.
const DeviceInfo& probe_device();

// Device memory, RAII over cudaMalloc/cudaFree. Zero bytes hold no allocation (data() == nullptr).
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::size_t bytes);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() { return ptr_; }
  const void* data() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  Buffer clone() const;  // device-to-device copy, ordered on the default stream

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Host <-> device copies (synchronous with respect to the host: download returns after every
// earlier operation on the device has finished and the bytes have arrived).
void upload(Buffer& dst, const void* host, std::size_t bytes);
void download(void* host, const Buffer& src, std::size_t bytes);
void synchronize();

// --- row-major GEMM through column-major cuBLAS ----------------------------------------------
//
// cuBLAS reads a buffer as column-major: a row-major r x c matrix M (element (i,j) at i*c + j) is,
// to cuBLAS, the c x r column-major matrix M^T with leading dimension c. So instead of the
// row-major C = A op(B) (m x n) we ask cuBLAS for the column-major C^T = op(B)^T A^T (n x m,
// ldc = n), whose buffer is exactly the row-major C:
//   cuBLAS's A operand = op(B)^T, i.e. our B buffer:
//     trans_b false: B row-major k x n  = column-major B^T (n x k, ld n); op(B)^T = B^T is that
//                    matrix as stored              -> op N, lda = n
//     trans_b true:  B row-major n x k  = column-major B^T (k x n, ld k); op(B)^T = B is its
//                    transpose                     -> op T, lda = k
//   cuBLAS's B operand = A^T, i.e. our A buffer: A row-major m x k = column-major A^T (k x m,
//                    ld k) as stored               -> op N, ldb = k
//   cuBLAS's dimensions: M = n, N = m, K = k; batch strides: A k*n, B m*k, C m*n elements.
// Example, the Gram matrix Y Y^T of a row-major p x q matrix Y: a = b = Y, trans_b = true,
// m = n = p, k = q: cublasGemmEx(OP_T, OP_N, p, p, q, Y, lda = q, Y, ldb = q, C, ldc = p), that is
// C(i,j) = sum_l Y(i,l) Y(j,l).
struct GemmPlan {
  bool trans_a = false;  // op of cuBLAS's A operand; its B operand is never transposed
  std::int64_t M = 0, N = 0, K = 0, lda = 0, ldb = 0, ldc = 0;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements between batch members
  std::int64_t batch = 1;
  const void* A = nullptr;  // cuBLAS's operands (A is our b, B is our a)
  const void* B = nullptr;
  void* C = nullptr;
};
inline GemmPlan plan_row_major_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const void* a, const void* b,
                                    bool trans_b, void* c, std::int64_t batch) {
  GemmPlan p;
  p.trans_a = trans_b;
  p.M = n;
  p.N = m;
  p.K = k;
  p.lda = trans_b ? k : n;
  p.ldb = k;
  p.ldc = n;
  p.stride_a = k * n;
  p.stride_b = m * k;
  p.stride_c = m * n;
  p.batch = batch;
  p.A = b;
  p.B = a;
  p.C = c;
  return p;
}

// How cuBLAS may compute fp32 GEMMs.
enum class Fp32Math {
  ieee,  // CUBLAS_COMPUTE_32F, CUBLAS_DEFAULT_MATH: products and sums in fp32
  tf32,  // CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_TF32_TENSOR_OP_MATH: inputs rounded to TF32
};

// One cuBLAS handle bound to the probed device, on the legacy default stream, with
// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION always set (a 16-bit GEMM's partial sums are
// never reduced in the 16-bit output type: accumulate in fp32, round once), atomics not allowed
// (the default; keeps results run-to-run reproducible).
class Blas {
 public:
  explicit Blas(Fp32Math fp32_math);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  Fp32Math fp32_math() const { return fp32_math_; }

  // Row-major C[b] = alpha * A[b] * op(B[b]) for b in 0..batch-1, each result rounded once from
  // the compute type (fp64 for f64, fp32 otherwise) to `e`. A[b] is m x k; op(B[b]) is k x n,
  // with B[b] stored k x n (trans_b false) or n x k (trans_b true). Matrices of a batch are
  // contiguous with strides m*k, k*n, m*n elements. batch == 1 calls cublasGemmEx; batch > 1
  // cublasGemmStridedBatchedEx (one call for the whole batch), both through plan_row_major_gemm.
  // k == 0 gives zeros; m, n or batch == 0 does nothing.
  void gemm_rm(Elem e, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const void* a, const void* b,
               bool trans_b, void* c, std::int64_t batch);

 private:
  void* handle_ = nullptr;  // cublasHandle_t
  Fp32Math fp32_math_;
};

// --- elementwise kernels (all element counts may be zero; nothing is launched then) ------------
// In every kernel, f64 arithmetic is IEEE double and every other type's arithmetic is IEEE fp32
// with the result rounded to the storage type (round to nearest even), never contracted into an
// FMA. The per-element formulas are the functors of element_ops.hpp.

// For a batch of `batch` contiguous n x n row-major matrices: C[i][j] = C[j][i] for i > j (the
// strictly lower triangle becomes the mirror image of the upper one, bit for bit).
void mirror_upper(Elem e, void* c, std::int64_t n, std::int64_t batch);

// out[i] = round(a * x[i]) over `count` elements (PyTorch's `a * X`).
void scale(Elem e, double a, const void* x, void* out, std::int64_t count);

// out[i] = round(round(a * x[i]) + p[i]) over `count` elements (PyTorch's `a * X + P`); out may be p.
void lincomb(Elem e, double a, const void* x, const void* p, void* out, std::int64_t count);

// Z[b][i][i] = round(Z[b][i][i] + a) for a batch of n x n matrices.
void add_diagonal(Elem e, void* z, double a, std::int64_t n, std::int64_t batch);

// Conversions between an fp32 carrier and a storage type (exact when the values are
// representable; otherwise round to nearest even). For e == f32 these are copies.
void f32_to_elem(Elem e, const float* in, void* out, std::int64_t count);
void elem_to_f32(Elem e, const void* in, float* out, std::int64_t count);
// x[i] = (float) round_to(e, x[i]) in place (e == f32: nothing to do).
void round_f32_inplace(Elem e, float* x, std::int64_t count);

// Per-matrix sum of squares in double, in a fixed order that depends only on the matrix's
// element count (never on the device, the batch size or the matrix's position in the batch):
// chunks of ops::kSumChunk elements, each summed by a fixed tree, then the chunks' sums by a
// fixed tree (element_ops.hpp spells the order out). `in` holds `batch` contiguous matrices of `per_matrix` elements,
// as double (in_f64) or float values; `sums` receives `batch` doubles on the host.
void sum_squares(const void* in, bool in_f64, std::int64_t per_matrix, std::int64_t batch, double* sums_host);

// Normalization's division, per matrix b with its own denominator den[b] (host array):
//   f64 input:   out = x / den                     (double; out type must be f64)
//   f32 input:   out = round_to(out_e, round_to(nd, x / den))   (fp32 division, IEEE)
// `nd` is the normalization dtype (f32, bf16 or f16) for the f32 input path.
void divide_f64(const double* in, const double* den_host, double* out, std::int64_t per_matrix, std::int64_t batch);
void divide_f32(const float* in, const float* den_host, Elem nd, Elem out_e, void* out, std::int64_t per_matrix,
                std::int64_t batch);

// Device time between two points of the default stream (CUDA events), for the benchmark.
class Timer {
 public:
  Timer();
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  void start();
  double stop_ms();  // waits for the device, returns milliseconds since start()

 private:
  void* begin_ = nullptr;  // cudaEvent_t
  void* end_ = nullptr;
};

}  // namespace nsv::cuda
