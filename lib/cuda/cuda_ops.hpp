#pragma once
// The CUDA backend's Ops policy for detail::ShardedIteration (lib/src/ns_algorithm.hpp), and the
// device matrix it works on. Compiled by the host compiler only (it includes Eigen); all device
// work goes through the thin API of device.hpp.
//
// A DeviceMatrix is a batch of `count` row-major rows x cols matrices stored back to back
// (count == 1 for a single matrix). Every Ops primitive acts on the whole batch at once, so the
// same ShardedIteration code runs one matrix (a cublasGemmEx per product) or a batch of
// same-shape matrices (a cublasGemmStridedBatchedEx per product).
//
// Semantics of each primitive (SPEC §1.5; identical in form to CpuOps in cpu_backend.cpp):
//   gram(Y)            round(Y Y^T): a GEMM (Y times Y^T, all entries computed) whose strictly
//                      lower triangle is then overwritten with the upper one, so the result is
//                      symmetric bit for bit whatever order cuBLAS summed in. (cuBLAS's syrk has
//                      no bf16/fp16 form and no strided-batched form; one GEMM path for every
//                      dtype and both modes keeps batched-vs-looped a question about GEMM alone.)
//   square(S, alpha)   round(round(alpha S) S): PyTorch's `c * S @ S`, an elementwise scale, then
//                      one GEMM, lower triangle mirrored from the upper one like gram's.
//   symmetric_product(A, B)  round(A B), lower triangle mirrored (see ns_algorithm.hpp: A B is a
//                      product of commuting polynomials in the Gram matrix). Both triangles are
//                      computed and one is discarded; a triangle-only product would halve it.
//                      With products=full neither square nor symmetric_product mirrors.
//   matmul(A, B)       round(A B).
//   lincomb(a, X, P)   round(round(a X) + P) elementwise, written over P.
//   add_diagonal(Z, a) Z_ii = round(Z_ii + round(a)): PyTorch's `Z + a * I`, I in the compute dtype.
//   recycle(M)         nothing: M's device buffer is freed as it goes.
//   all_reduce(parts)  device -> host Mat<float> (Mat<double> for fp64), the all-reduce of the
//                      Communicator the ops hold, the compute dtype on the wire, host -> device.
//   scalar(v)          v rounded to fp32 (fp64 for fp64): PyTorch's opmath for a Python scalar.
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "device.hpp"
#include "nsv/communicator.hpp"
#include "nsv/dtype.hpp"
#include "nsv/kernels.hpp"
#include "nsv/matrix.hpp"

namespace nsv::cuda_detail {

inline cuda::Elem elem_of(DType d) {
  switch (d) {
    case DType::fp64:
      return cuda::Elem::f64;
    case DType::fp32:
      return cuda::Elem::f32;
    case DType::bf16:
      return cuda::Elem::bf16;
    case DType::fp16:
      return cuda::Elem::f16;
  }
  throw std::invalid_argument("elem_of: bad dtype");
}

struct DeviceMatrix {
  cuda::Elem elem = cuda::Elem::f32;
  std::int64_t rows = 0, cols = 0, count = 1;
  cuda::Buffer buf;

  DeviceMatrix() = default;
  DeviceMatrix(cuda::Elem e, std::int64_t r, std::int64_t c, std::int64_t n = 1)
      : elem(e), rows(r), cols(c), count(n), buf(static_cast<std::size_t>(r * c * n) * cuda::elem_size(e)) {}
  DeviceMatrix(const DeviceMatrix& o) : elem(o.elem), rows(o.rows), cols(o.cols), count(o.count), buf(o.buf.clone()) {}
  DeviceMatrix& operator=(const DeviceMatrix& o) {
    if (this != &o) *this = DeviceMatrix(o);
    return *this;
  }
  DeviceMatrix(DeviceMatrix&&) noexcept = default;
  DeviceMatrix& operator=(DeviceMatrix&&) noexcept = default;

  std::int64_t per_matrix() const { return rows * cols; }
  std::int64_t elements() const { return rows * cols * count; }
  void* data() { return buf.data(); }
  const void* data() const { return buf.data(); }
};

// Host <-> device for DeviceMatrix, the values carried as MatD (exact for every dtype).
// upload_matrices: the matrices (all of one shape, each transposed when `transpose`) rounded to
// dtype d, as one batch. download_matrices: the batch back, each transposed when `transpose`.
DeviceMatrix upload_matrices(const std::vector<const MatD*>& mats, bool transpose, DType d);
std::vector<MatD> download_matrices(const DeviceMatrix& x, bool transpose);

class CudaOps {
 public:
  using Matrix = DeviceMatrix;
  using Scalar = double;  // holds an fp32 value exactly for every dtype but fp64

  // `comm` sums the ranks' Gram matrices; null for a single matrix or a batch, which never reduce.
  CudaOps(cuda::Blas& blas, const NsConfig& cfg, Communicator* comm = nullptr)
      : blas_(blas), comm_(comm), dtype_(cfg.dtype), elem_(elem_of(cfg.dtype)), mirror_(cfg.products == Products::symmetric) {}

  Scalar scalar(double v) const { return dtype_ == DType::fp64 ? v : static_cast<double>(static_cast<float>(v)); }
  std::int64_t rows(const Matrix& m) const { return m.rows; }
  std::int64_t cols(const Matrix& m) const { return m.cols; }

  Matrix gram(const Matrix& y) {
    Matrix c(elem_, y.rows, y.rows, y.count);
    blas_.gemm_rm(elem_, y.rows, y.rows, y.cols, 1.0, y.data(), y.data(), /*trans_b=*/true, c.data(), y.count);
    cuda::mirror_upper(elem_, c.data(), c.rows, c.count);
    return c;
  }

  Matrix square(const Matrix& s, Scalar alpha) {
    if (s.rows != s.cols) throw std::logic_error("CudaOps::square: matrix is not square");
    Matrix scaled(elem_, s.rows, s.cols, s.count);
    cuda::scale(elem_, alpha, s.data(), scaled.data(), s.elements());
    return symmetric_product(scaled, s);
  }

  Matrix symmetric_product(const Matrix& a, const Matrix& b) {
    if (a.rows != a.cols) throw std::logic_error("CudaOps::symmetric_product: matrix is not square");
    Matrix c = matmul(a, b);
    if (mirror_) cuda::mirror_upper(elem_, c.data(), c.rows, c.count);
    return c;
  }

  Matrix matmul(const Matrix& a, const Matrix& b) {
    if (a.cols != b.rows || a.count != b.count) throw std::logic_error("CudaOps::matmul: shapes do not match");
    Matrix c(elem_, a.rows, b.cols, a.count);
    blas_.gemm_rm(elem_, a.rows, b.cols, a.cols, 1.0, a.data(), b.data(), /*trans_b=*/false, c.data(), a.count);
    return c;
  }

  Matrix lincomb(Scalar a, const Matrix& x, Matrix p) {
    if (x.rows != p.rows || x.cols != p.cols || x.count != p.count)
      throw std::logic_error("CudaOps::lincomb: shapes do not match");
    cuda::lincomb(elem_, a, x.data(), p.data(), p.data(), x.elements());
    return p;
  }

  void recycle(Matrix&&) {}

  void add_diagonal(Matrix& z, Scalar a) {
    if (z.rows != z.cols) throw std::logic_error("CudaOps::add_diagonal: matrix is not square");
    cuda::add_diagonal(elem_, z.data(), round_to(dtype_, a), z.rows, z.count);
  }

  bool communicates() const { return comm_ != nullptr && comm_->size() > 1; }
  Matrix all_reduce(const std::vector<Matrix>& parts) {
    if (!comm_) throw std::logic_error("CudaOps::all_reduce: a single matrix has nothing to reduce");
    Communicator& comm = *comm_;
    if (parts.empty()) throw std::logic_error("CudaOps::all_reduce: no parts");
    for (const auto& p : parts)
      if (p.count != 1) throw std::logic_error("CudaOps::all_reduce: batched matrices are never reduced");
    const std::int64_t r = parts[0].rows, c = parts[0].cols;
    if (dtype_ == DType::fp64) {
      std::vector<MatD> host;
      host.reserve(parts.size());
      for (const auto& p : parts) {
        MatD h(p.rows, p.cols);
        cuda::download(h.data(), p.buf, static_cast<std::size_t>(p.elements()) * sizeof(double));
        host.push_back(std::move(h));
      }
      const MatD sum = comm.all_reduce(host, dtype_);
      Matrix out(elem_, r, c);
      cuda::upload(out.buf, sum.data(), static_cast<std::size_t>(out.elements()) * sizeof(double));
      return out;
    }
    std::vector<MatF> host;
    host.reserve(parts.size());
    for (const auto& p : parts) {
      cuda::Buffer f32(static_cast<std::size_t>(p.elements()) * sizeof(float));
      cuda::elem_to_f32(elem_, p.data(), static_cast<float*>(f32.data()), p.elements());
      MatF h(p.rows, p.cols);
      cuda::download(h.data(), f32, f32.bytes());
      host.push_back(std::move(h));
    }
    // The sum arrives rounded to the compute dtype (the wire type), so converting it back to the
    // storage type below is exact.
    const MatF sum = comm.all_reduce(host, dtype_);
    Matrix out(elem_, r, c);
    cuda::Buffer f32(static_cast<std::size_t>(out.elements()) * sizeof(float));
    cuda::upload(f32, sum.data(), f32.bytes());
    cuda::f32_to_elem(elem_, static_cast<const float*>(f32.data()), out.data(), out.elements());
    return out;
  }

 private:
  cuda::Blas& blas_;
  Communicator* comm_;
  DType dtype_;
  cuda::Elem elem_;
  bool mirror_;
};

}  // namespace nsv::cuda_detail
