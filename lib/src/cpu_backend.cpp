// The CPU reference backend: OpenBLAS GEMMs (single-threaded per call, so a product's bits
// depend only on its operands) with the dtype emulation of SPEC §1.5 around them. Parallelism
// comes from running independent matrices on different OpenMP threads, and within one matrix from
// the fixed row panels of row_panels.hpp, never from a thread count a product is split by, which
// is what makes the determinism contract hold for any thread count.
#include <algorithm>
#include <stdexcept>
#include <vector>

#include "normalize.hpp"
#include "ns_algorithm.hpp"
#include "row_panels.hpp"
#include "sharded_frame.hpp"
#include "nsv/backend.hpp"
#include "nsv/blas_threads.hpp"

namespace nsv {
namespace {

int as_int(Eigen::Index v) {
  if (v > Eigen::Index{2147483647}) throw std::invalid_argument("matrix dimension exceeds BLAS int range");
  return static_cast<int>(v);
}

template <class T>
class CpuOps {
 public:
  using Matrix = Mat<T>;
  using Scalar = T;

  // `comm` sums the ranks' Gram matrices; null for a single matrix, which never reduces.
  // `transposed`: the frame holds a tall input transposed (the kernels' X = G.mT).
  CpuOps(const NsConfig& cfg, Communicator* comm, bool transposed)
      : dtype_(cfg.dtype),
        compute_sums_(cfg.accumulate == Accumulate::compute),
        gram_compute_sums_(compute_sums_ && transposed),
        full_(cfg.products == Products::full),
        comm_(comm) {}

  // A coefficient as PyTorch applies a Python scalar to a tensor: on the GPU in the op's float
  // math (fp32), on the CPU with accumulate=compute cast to the tensor's dtype first (torch 1.13's
  // CPU kernels for bf16/fp16: 3.4445 * X multiplies by bf16(3.4445) = 3.4375; with it the
  // reference reproduces DeepSpeed's bf16 golden outputs bit for bit, golden.cpp).
  Scalar scalar(double v) const { return compute_sums_ ? round(static_cast<T>(v)) : static_cast<T>(v); }
  Eigen::Index rows(const Matrix& m) const { return m.rows(); }
  Eigen::Index cols(const Matrix& m) const { return m.cols(); }

  // Y Y^T is PyTorch's X @ X.mT. For a wide or square input X is the caller's contiguous tensor
  // and X.mT a transposed view, which PyTorch's CPU GEMM sums as dot products with a float
  // accumulator, rounded once, also when accumulate=compute (checked against torch 1.13 with
  // oneDNN off, which reproduces DeepSpeed's bf16 golden outputs). For a tall input the kernels
  // transpose with X = G.mT: X is then the view and X.mT contiguous, which takes the native kernel
  // that sums in the compute dtype (checked with Debian's torch 1.13.1 on 20x8 and 24x6 bf16
  // inputs; that build hands products above 4096 multiply-adds to oneDNN, in fp32, so compute is
  // the wider of its two roundings).
  Matrix gram(const Matrix& y) const {
    Matrix c = fresh(y.rows(), y.rows());
    if (y.cols() == 0) return c.setZero();
    if (gram_compute_sums_) {
      const Eigen::Index k = y.cols();
      for (Eigen::Index i = 0; i < c.rows(); ++i)
        for (Eigen::Index j = i; j < c.cols(); ++j) c(i, j) = rounded_sum_of_products(y.data() + i * k, y.data() + j * k, k);
      mirror_upper(c);
      return c;
    }
    // One SYRK over the whole matrix: no split into panels keeps its bits (row_panels.hpp).
    const int k = as_int(y.cols());
    detail::syrk_rows(CblasNoTrans, as_int(y.rows()), k, y.data(), k, c.data(), as_int(y.rows()));
    mirror_upper(c);
    return rounded(std::move(c));
  }

  // alpha S S as PyTorch evaluates `c * S @ S`: (c*S) rounded, then one product. With symmetric
  // products the scaled copy is made one row panel at a time, so no second n x n matrix is held.
  Matrix square(const Matrix& s, Scalar alpha) const {
    if (!full_) return upper_product(s, s, &alpha);
    Matrix scaled = fresh(s.rows(), s.cols());
    rounded_scaled_rows(alpha, s, 0, s.rows(), scaled.data());
    Matrix c = matmul(scaled, s);
    recycle(std::move(scaled));
    return c;
  }

  Matrix symmetric_product(const Matrix& a, const Matrix& b) const {
    return full_ ? matmul(a, b) : upper_product(a, b, nullptr);
  }

  Matrix matmul(const Matrix& a, const Matrix& b) const {
    if (compute_sums_) return naive_product(a, b);
    Matrix c = fresh(a.rows(), b.cols());
    if (a.cols() == 0 || c.size() == 0) return c.setZero();
    const int m = as_int(a.rows()), n = as_int(b.cols()), k = as_int(a.cols());
    detail::for_each_row_panel(m, detail::product_panel_rows(m), static_cast<double>(m) * n * k,
                               [&](Eigen::Index i0, Eigen::Index h, int) {
      detail::gemm_rows(CblasNoTrans, CblasNoTrans, static_cast<int>(h), n, k, a.data() + i0 * k, k, b.data(), n, c.data() + i0 * n, n);
    });
    return rounded(std::move(c));
  }

  Matrix lincomb(Scalar a, const Matrix& x, Matrix p) const {
    const T* xs = x.data();
    T* ps = p.data();
    with_rounding([&](auto rnd) {
      for (Eigen::Index i = 0; i < p.size(); ++i) ps[i] = rnd(rnd(a * xs[i]) + ps[i]);
    });
    return p;
  }

  void recycle(Matrix&& m) const {
    if (m.size() < kRecycleMinElements) return;
    if (spare_.size() == kMaxSpares) spare_.erase(spare_.begin());
    spare_.push_back(std::move(m));
  }

  void add_diagonal(Matrix& z, Scalar a) const {
    // PyTorch's `Z + a * I` with I in the compute dtype: a * I is a tensor of that dtype, so a
    // itself is rounded to it first (bf16: 3.4445 -> 3.4375), then each diagonal sum once more.
    const T a_rounded = round(a);
    for (Eigen::Index i = 0; i < z.rows(); ++i) z(i, i) = round(z(i, i) + a_rounded);
  }

  bool communicates() const { return comm_ != nullptr && comm_->size() > 1; }
  Matrix all_reduce(const std::vector<Matrix>& parts) const {
    if (!comm_) throw std::logic_error("CpuOps::all_reduce: a single matrix has nothing to reduce");
    return comm_->all_reduce(parts, dtype_);
  }

 private:
  // The storage of a recycled matrix of the same size when there is one: a fresh allocation of a
  // large matrix costs a page fault per 4 KiB on first touch. Only storage is reused, never values, so
  // no result depends on which buffer it lands in (contract D; K10 varies addresses).
  Matrix fresh(Eigen::Index rows, Eigen::Index cols) const {
    for (auto it = spare_.begin(); it != spare_.end(); ++it)
      if (it->size() == rows * cols) {
        Matrix m = std::move(*it);
        spare_.erase(it);
        m.resize(rows, cols);  // same size: keeps the storage
        return m;
      }
    return Matrix(rows, cols);
  }

  T round(T v) const { return static_cast<T>(round_to(dtype_, v)); }

  template <class F>
  void with_rounding(F&& f) const {
    with_rounding_to(dtype_, std::forward<F>(f));
  }

  Matrix rounded(Matrix m) const {
    round_block(m.data(), m.rows(), m.cols(), m.cols());
    return m;
  }

  // Rounds a rows x cols block (row stride ld) in place; fp32 and fp64 values already are.
  void round_block(T* p, Eigen::Index rows, Eigen::Index cols, Eigen::Index ld) const {
    if (dtype_ != DType::bf16 && dtype_ != DType::fp16) return;
    with_rounding([&](auto rnd) {
      for (Eigen::Index i = 0; i < rows; ++i)
        for (Eigen::Index j = 0; j < cols; ++j) p[i * ld + j] = rnd(p[i * ld + j]);
    });
  }

  // Rows [first, first + count) of round(alpha S), into `out` (count x n, row-major).
  void rounded_scaled_rows(Scalar alpha, const Matrix& s, Eigen::Index first, Eigen::Index count, T* out) const {
    const T* in = s.data() + first * s.cols();
    with_rounding([&](auto rnd) {
      for (Eigen::Index i = 0; i < count * s.cols(); ++i) out[i] = rnd(alpha * in[i]);
    });
  }

  // The upper triangle of round(A' B), A' = round(alpha A) when `alpha` is given, else A; the
  // strictly lower triangle is then the mirror image of the upper one. The triangle is covered by
  // the row panels of row_panels.hpp, [i0, i0 + h) x [i0, n), one GEMM each: about (1 + h/n)/2 of
  // a full product's FLOPs. Each thread scales its panels' rows into its own scratch rows.
  Matrix upper_product(const Matrix& a, const Matrix& b, const Scalar* alpha) const {
    const Eigen::Index n = a.rows();
    Matrix c = fresh(n, n);
    if (n == 0) return c;
    as_int(n);  // so every panel's sizes fit BLAS's int
    if (alpha) scratch_.resize(static_cast<std::size_t>(detail::panel_slots()));
    detail::for_each_row_panel(n, detail::triangle_panel_rows(n), 0.5 * static_cast<double>(n) * n * n,
                               [&](Eigen::Index i0, Eigen::Index rows, int slot) {
      const T* left = a.data() + i0 * n;
      if (alpha) {
        std::vector<T>& scaled = scratch_[static_cast<std::size_t>(slot)];
        scaled.resize(static_cast<std::size_t>(rows * n));
        rounded_scaled_rows(*alpha, a, i0, rows, scaled.data());
        left = scaled.data();
      }
      panel_product(left, rows, b, i0, c);
    });
    mirror_upper(c);
    return c;
  }

  // C[i0 : i0+rows, i0 : n] = round(left B[:, i0 : n]), `left` being rows x n, row-major.
  void panel_product(const T* left, Eigen::Index rows, const Matrix& b, Eigen::Index i0, Matrix& c) const {
    const Eigen::Index n = b.cols();
    T* out = c.data() + i0 * n + i0;
    if (compute_sums_) {
      // b is symmetric bit for bit, so its column j is its row j: contiguous k loops.
      for (Eigen::Index i = 0; i < rows; ++i)
        for (Eigen::Index j = i0; j < n; ++j) out[i * n + (j - i0)] = rounded_sum_of_products(left + i * n, b.data() + j * n, n);
      return;
    }
    detail::gemm_rows(CblasNoTrans, CblasNoTrans, static_cast<int>(rows), static_cast<int>(n - i0), static_cast<int>(n), left,
                      static_cast<int>(n), b.data() + i0, static_cast<int>(n), out, static_cast<int>(n));
    round_block(out, rows, n - i0, n);
  }

  // Lower triangle := transpose of the upper one, in tiles so both sides stay in cache.
  static void mirror_upper(Matrix& c) {
    constexpr Eigen::Index tile = 32;
    const Eigen::Index n = c.rows();
    for (Eigen::Index ib = 0; ib < n; ib += tile)
      for (Eigen::Index jb = 0; jb <= ib; jb += tile)
        for (Eigen::Index i = ib; i < std::min(ib + tile, n); ++i)
          for (Eigen::Index j = jb; j < std::min(jb + tile, i); ++j) c(i, j) = c(j, i);
  }

  // PyTorch's CPU GEMM for 16-bit types: every product and every partial sum rounded to the
  // compute dtype, summed in k order.
  T rounded_sum_of_products(const T* a, const T* b, Eigen::Index k) const {
    T acc = 0;
    for (Eigen::Index l = 0; l < k; ++l) acc = round(acc + round(a[l] * b[l]));
    return acc;
  }

  template <class B>
  Matrix naive_product(const Matrix& a, const B& b_expr) const {
    const Matrix bt = b_expr.transpose();  // rows of bt are columns of b: contiguous k loops
    Matrix c(a.rows(), bt.rows());
    for (Eigen::Index i = 0; i < c.rows(); ++i)
      for (Eigen::Index j = 0; j < c.cols(); ++j)
        c(i, j) = rounded_sum_of_products(a.data() + i * a.cols(), bt.data() + j * a.cols(), a.cols());
    return c;
  }

  static constexpr Eigen::Index kRecycleMinElements = 16384;  // 64 KiB of floats: below, malloc reuses
  static constexpr std::size_t kMaxSpares = 4;                  // the most one loop step frees

  DType dtype_;
  bool compute_sums_;
  bool gram_compute_sums_;
  bool full_;
  Communicator* comm_;
  // Caches, not state: storage for later results and, per OpenMP thread, the scaled row panel of
  // `square`.
  mutable std::vector<Matrix> spare_;
  mutable std::vector<std::vector<T>> scratch_;
};

// The iteration on the frame of `shards` (sharded_frame.hpp), normalized straight into the
// working type T; the result in the shards' layout.
template <class T>
ShardedResult iterate(const std::vector<const MatD*>& shards, const detail::ShardedFrame& frame, Communicator* comm,
                      const NsConfig& cfg) {
  std::vector<Mat<T>> work = detail::normalize_as<T>(shards, frame.transpose, cfg, comm);
  ShardedResult out;
  {
    CpuOps<T> ops(cfg, comm, frame.transpose);
    detail::ShardedIteration<CpuOps<T>> it(ops, cfg, work.size());
    it.run(work, frame.iteration);
    out.flops_per_rank = it.flops_per_rank();
  }  // the ops' spare storage is freed before the results are allocated
  for (auto& w : work) {
    out.shards.push_back(frame.transpose ? MatD(w.transpose().template cast<double>()) : MatD(w.template cast<double>()));
    w = Mat<T>();  // each working copy goes as soon as its result exists
  }
  return out;
}

ShardedResult iterate_any(const std::vector<const MatD*>& shards, const detail::ShardedFrame& frame, Communicator* comm,
                          const NsConfig& cfg) {
  return cfg.dtype == DType::fp64 ? iterate<double>(shards, frame, comm, cfg) : iterate<float>(shards, frame, comm, cfg);
}

// One matrix: the one-shard frame, the kernel's own loop.
MatD whole(const MatD& g, const NsConfig& cfg) {
  const auto frame = detail::sharded_frame(cfg, 0, {{g.rows(), g.cols()}}, 1, g.rows(), Iteration::standard);
  return std::move(iterate_any({&g}, frame, nullptr, cfg).shards[0]);
}

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }

  Batch newton_schulz(const Batch& inputs, const NsConfig& cfg) const override {
    cfg.validate();
    const OneBlasThread pinned;  // the bits of single-threaded GEMMs (blas_threads.hpp)
    Batch out(inputs.size());
    const auto n = static_cast<std::ptrdiff_t>(inputs.size());
#pragma omp parallel for schedule(dynamic, 1) if (n > 1)
    for (std::ptrdiff_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = whole(inputs[static_cast<std::size_t>(i)], cfg);
    return out;
  }

  ShardedResult newton_schulz_hosted(const std::vector<MatD>& shards, int axis, std::int64_t split_extent,
                                     Iteration iteration, Communicator& comm, const NsConfig& cfg) const override {
    cfg.validate();
    const OneBlasThread pinned;
    if (shards.size() != comm.hosted_ranks().size())
      throw std::invalid_argument("one shard per hosted rank is required");
    const auto frame =
        detail::sharded_frame(cfg, axis, detail::shard_shapes(shards), comm.size(), split_extent, iteration);
    std::vector<const MatD*> views;
    for (const auto& s : shards) views.push_back(&s);
    return iterate_any(views, frame, &comm, cfg);
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace nsv
