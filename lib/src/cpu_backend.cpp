// The CPU reference backend: OpenBLAS GEMMs (single-threaded per call, so a product's bits
// depend only on its operands) with the dtype emulation of SPEC §1.5 around them. Parallelism
// comes from running independent matrices on different OpenMP threads, never from splitting
// one product, which is what makes the determinism contract hold for any thread count.
#include <cblas.h>

#include <stdexcept>

#include "normalize.hpp"
#include "ns_algorithm.hpp"
#include "nsv/backend.hpp"
#include "nsv/cuda_backend.hpp"

extern "C" void openblas_set_num_threads(int);

namespace nsv {
namespace {

// --- BLAS dispatch on the element type --------------------------------------------------------
void blas_gemm(int m, int n, int k, float alpha, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, alpha, a, k, b, n, 0.0f, c, n);
}
void blas_gemm(int m, int n, int k, double alpha, const double* a, const double* b, double* c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, alpha, a, k, b, n, 0.0, c, n);
}
void blas_syrk(int n, int k, float alpha, const float* a, float* c) {
  cblas_ssyrk(CblasRowMajor, CblasUpper, CblasNoTrans, n, k, alpha, a, k, 0.0f, c, n);
}
void blas_syrk(int n, int k, double alpha, const double* a, double* c) {
  cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, n, k, alpha, a, k, 0.0, c, n);
}

int as_int(Eigen::Index v) {
  if (v > Eigen::Index{2147483647}) throw std::invalid_argument("matrix dimension exceeds BLAS int range");
  return static_cast<int>(v);
}

template <class T>
class CpuOps {
 public:
  using Matrix = Mat<T>;
  using Scalar = T;

  CpuOps(DType dtype, Accumulate accumulate) : dtype_(dtype), compute_sums_(accumulate == Accumulate::compute) {}

  Scalar scalar(double v) const { return static_cast<T>(v); }
  Eigen::Index rows(const Matrix& m) const { return m.rows(); }
  Eigen::Index cols(const Matrix& m) const { return m.cols(); }

  // Y Y^T sums in fp32 even when accumulate=compute: PyTorch's CPU GEMM takes its transposed-
  // operand path for X @ X.mT, a dot product with a float accumulator, rounded once (checked
  // against torch 1.13 with oneDNN off, which reproduces DeepSpeed's bf16 golden outputs).
  Matrix gram(const Matrix& y) const {
    Matrix c(y.rows(), y.rows());
    if (y.cols() == 0) return c.setZero();
    blas_syrk(as_int(y.rows()), as_int(y.cols()), T(1), y.data(), c.data());
    return rounded(mirrored_upper(std::move(c)));
  }

  // alpha S S as PyTorch evaluates `c * S @ S`: (c*S) rounded, then one product. Not S S^T:
  // in the gram loop R is symmetric only in exact arithmetic once it has been updated (Z R is
  // not symmetric bit for bit), and S S^T with its upper triangle mirrored is then a different
  // product whose error the loop amplifies (fp32, 10 steps: 4e-2 from the fp64 map, where
  // DeepSpeed's gram kernel and this one stay at 3e-6; found by the K9 golden property).
  Matrix square(const Matrix& s, Scalar alpha) const { return matmul(rounded_scaled(alpha, s), s); }

  Matrix matmul(const Matrix& a, const Matrix& b) const {
    if (compute_sums_) return naive_product(a, b);
    Matrix c(a.rows(), b.cols());
    if (a.cols() == 0 || c.size() == 0) return c.setZero();
    blas_gemm(as_int(a.rows()), as_int(b.cols()), as_int(a.cols()), T(1), a.data(), b.data(), c.data());
    return rounded(std::move(c));
  }

  Matrix lincomb(Scalar a, const Matrix& x, const Matrix& p) const {
    Matrix out(x.rows(), x.cols());
    const T* xs = x.data();
    const T* ps = p.data();
    T* o = out.data();
    for (Eigen::Index i = 0; i < out.size(); ++i) o[i] = round(round(a * xs[i]) + ps[i]);
    return out;
  }

  void add_diagonal(Matrix& z, Scalar a) const {
    for (Eigen::Index i = 0; i < z.rows(); ++i) z(i, i) = round(z(i, i) + a);
  }

  Matrix all_reduce(Communicator& comm, const std::vector<Matrix>& parts) const {
    return comm.all_reduce(parts, dtype_);
  }

 private:
  T round(T v) const { return static_cast<T>(round_to(dtype_, v)); }

  Matrix rounded(Matrix m) const {
    if (dtype_ == DType::bf16 || dtype_ == DType::fp16)
      for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = round(m.data()[i]);
    return m;
  }

  Matrix rounded_scaled(Scalar alpha, const Matrix& s) const {
    Matrix out(s.rows(), s.cols());
    for (Eigen::Index i = 0; i < s.size(); ++i) out.data()[i] = round(alpha * s.data()[i]);
    return out;
  }

  static Matrix mirrored_upper(Matrix c) {
    for (Eigen::Index i = 0; i < c.rows(); ++i)
      for (Eigen::Index j = 0; j < i; ++j) c(i, j) = c(j, i);
    return c;
  }

  // PyTorch's CPU GEMM for 16-bit types: every product and every partial sum rounded to the
  // compute dtype, summed in k order.
  template <class B>
  Matrix naive_product(const Matrix& a, const B& b_expr) const {
    const Matrix bt = b_expr.transpose();  // rows of bt are columns of b: contiguous k loops
    Matrix c(a.rows(), bt.rows());
    const Eigen::Index k = a.cols();
    for (Eigen::Index i = 0; i < c.rows(); ++i)
      for (Eigen::Index j = 0; j < c.cols(); ++j) {
        const T* ar = a.data() + i * k;
        const T* br = bt.data() + j * k;
        T acc = 0;
        for (Eigen::Index l = 0; l < k; ++l) acc = round(acc + round(ar[l] * br[l]));
        c(i, j) = acc;
      }
    return c;
  }

  DType dtype_;
  bool compute_sums_;
};

template <class T>
Mat<T> narrow(const MatD& m) {
  return m.cast<T>();
}

// Runs the iteration on column-split shards Y_r (already normalized) with Ops over T.
template <class T>
ShardedResult iterate(const std::vector<MatD>& y, Iteration iteration, Communicator* comm, const NsConfig& cfg) {
  CpuOps<T> ops(cfg.dtype, cfg.accumulate);
  std::vector<Mat<T>> work;
  work.reserve(y.size());
  for (const auto& s : y) work.push_back(narrow<T>(s));
  detail::ShardedIteration<CpuOps<T>> it(ops, comm, cfg, y.size());
  it.run(work, iteration);
  ShardedResult out;
  for (const auto& w : work) out.shards.push_back(w.template cast<double>());
  out.flops_per_rank = it.flops_per_rank();
  return out;
}

ShardedResult iterate_any(const std::vector<MatD>& y, Iteration iteration, Communicator* comm, const NsConfig& cfg) {
  return cfg.dtype == DType::fp64 ? iterate<double>(y, iteration, comm, cfg)
                                  : iterate<float>(y, iteration, comm, cfg);
}

// The kernel's own choice: the gram loop only when the Gram matrix is smaller than the matrix.
Iteration kernel_iteration(const NsConfig& cfg, Eigen::Index gram_dim, Eigen::Index other_dim) {
  return cfg.kernel == Kernel::gram && gram_dim < other_dim ? Iteration::gram : Iteration::standard;
}

MatD whole(const MatD& g, const NsConfig& cfg) {
  const bool tall = detail::is_tall(g);
  const MatD wide = tall ? MatD(g.transpose()) : g;
  const auto y = detail::normalize({wide}, cfg, nullptr);
  MatD x = iterate_any(y, kernel_iteration(cfg, wide.rows(), wide.cols()), nullptr, cfg).shards[0];
  return tall ? MatD(x.transpose()) : x;
}

class CpuBackend final : public Backend {
 public:
  CpuBackend() { openblas_set_num_threads(1); }

  std::string_view name() const override { return "cpu"; }

  Batch newton_schulz(const Batch& inputs, const NsConfig& cfg) const override {
    cfg.validate();
    Batch out(inputs.size());
    const auto n = static_cast<std::ptrdiff_t>(inputs.size());
#pragma omp parallel for schedule(dynamic, 1) if (n > 1)
    for (std::ptrdiff_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = whole(inputs[static_cast<std::size_t>(i)], cfg);
    return out;
  }

  ShardedResult newton_schulz_sharded(const std::vector<MatD>& shards, int axis, Iteration iteration,
                                      Communicator& comm, const NsConfig& cfg) const override {
    cfg.validate();
    if (axis != 0 && axis != 1) throw std::invalid_argument("axis must be 0 or 1");
    if (static_cast<int>(shards.size()) != comm.size())
      throw std::invalid_argument("one shard per rank is required");
    if (shards.size() == 1) return {{whole(shards[0], cfg)}, {ns_flops(cfg, shards[0].rows(), shards[0].cols())}};
    // Y = [Y_1 ... Y_p] split along its columns: the shards themselves for a dim-1 split, their
    // transposes for a dim-0 split. The Gram Y Y^T is then over the unsharded axis.
    std::vector<MatD> y;
    Eigen::Index gram_dim = 0, other_dim = 0;
    for (const auto& s : shards) {
      y.push_back(axis == 1 ? s : MatD(s.transpose()));
      gram_dim = y.back().rows();
      other_dim += y.back().cols();
    }
    const auto normalized = detail::normalize(y, cfg, &comm);
    const Iteration chosen = gram_dim == other_dim ? Iteration::standard : iteration;
    ShardedResult result = iterate_any(normalized, chosen, &comm, cfg);
    if (axis == 0)
      for (auto& s : result.shards) s = MatD(s.transpose());
    return result;
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

std::unique_ptr<Backend> make_backend(std::string_view name) {
  if (name == "cpu") return make_cpu_backend();
  if (name.starts_with("cuda")) return make_cuda_backend(parse_cuda_backend_name(name));
  throw std::invalid_argument("unknown backend '" + std::string(name) + "': expected cpu or cuda[-tf32][-batched]");
}

MatD newton_schulz(const Backend& backend, const MatD& g, const NsConfig& cfg) {
  return backend.newton_schulz(Batch{g}, cfg)[0];
}

}  // namespace nsv
