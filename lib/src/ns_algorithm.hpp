#pragma once
// The Newton-Schulz iterations, written once for every backend and every rank count.
//
// The algorithm runs in lockstep over the shards Y_r = [Y_1 ... Y_p] of a matrix Y split along
// its columns, so that the Gram matrix over Y's rows is the sum of the ranks' local Grams:
// Y Y^T = sum_r Y_r Y_r^T. A whole matrix is the one-shard case with no communication, which
// is what makes "every distributed strategy at tp = 1 equals the kernel" hold by construction.
//
// `Ops` supplies the dtype-emulating primitives of a backend (each result rounded once to the
// compute dtype, see SPEC §1.5):
//   Matrix gram(Y)               round(Y Y^T), upper triangle mirrored (symmetric, exactly)
//   Matrix square(S, alpha)      round(round(alpha S) S), PyTorch's `c * S @ S`, upper triangle
//                                mirrored
//   Matrix symmetric_product(A, B)  round(A B), upper triangle mirrored
//   Matrix matmul(A, B)          round(A B)
//   Matrix lincomb(a, X, P)      round(round(a X) + P)       (PyTorch's `a * X + P`); P is taken
//                                by value so a backend can write the result into its storage
//   void   add_diagonal(Z, a)    Z_ii = round(Z_ii + round(a))   (PyTorch's `Z + a * I`, I in the
//                                compute dtype: a * I rounds a)
//   Matrix all_reduce(parts)     the sum over ranks of the ranks' parts, every rank receiving it:
//                                the data backends through the Communicator they hold, the
//                                shape-only ops of the cost model into their ledger. The
//                                iteration never sees a communicator, so one rank per process
//                                (MPI) and all ranks in one process (the simulation) run the
//                                same code.
//   bool   communicates()        whether the matrix is held by more than one rank (the reduced
//                                Gram then needs all_reduce, even when this process hosts a
//                                single rank's shard, as under MPI)
//   Scalar scalar(double)        a coefficient in the compute arithmetic
//   Index  rows(M), cols(M)
//   void   recycle(M&&)          M is dead; its storage may serve a later result of the same
//                                size (a no-op where allocation is cheap)
//
// Every n x n matrix of either loop is a polynomial in the Gram matrix A = Y Y^T, so the products
// among them commute and are symmetric in exact arithmetic. PyTorch computes both triangles of
// each and gets a matrix that is symmetric only up to rounding; here only the upper triangle is
// computed and mirrored, which halves their FLOPs and keeps every n x n matrix symmetric bit for
// bit (so both operands of every product are exactly symmetric, and A B = A B^T holds in the
// engine's arithmetic too). The rounding errors are those of the same products, one per entry;
// the bounded properties (K6, K9, S5) compare against the float64 oracle, not against PyTorch's
// bits.
#include <cstdint>
#include <utility>
#include <vector>

#include "nsv/backend.hpp"
#include "nsv/kernels.hpp"

namespace nsv::detail {

template <class Ops>
class ShardedIteration {
 public:
  using Matrix = typename Ops::Matrix;

  ShardedIteration(Ops& ops, const NsConfig& cfg, std::size_t ranks) : ops_(ops), cfg_(cfg), flops_(ranks, 0) {}

  const std::vector<std::uint64_t>& flops_per_rank() const { return flops_; }

  void run(std::vector<Matrix>& y, Iteration iteration) {
    if (iteration == Iteration::standard)
      standard(y);
    else
      gram(y);
  }

 private:
  // Y Y^T summed over ranks; every rank holds the result.
  Matrix reduced_gram(const std::vector<Matrix>& y) {
    std::vector<Matrix> parts;
    parts.reserve(y.size());
    for (std::size_t r = 0; r < y.size(); ++r) {
      flops_[r] += 2 * sq(ops_.rows(y[r])) * u(ops_.cols(y[r]));
      parts.push_back(ops_.gram(y[r]));
    }
    if (!ops_.communicates()) return std::move(parts[0]);
    return ops_.all_reduce(parts);
  }

  // b R + c R R on the replicated Gram matrix.
  Matrix polynomial(const Matrix& r, const Coeffs& k) {
    replicated(2 * cube(ops_.rows(r)));
    return ops_.lincomb(ops_.scalar(k.b), r, ops_.square(r, ops_.scalar(k.c)));
  }

  // Replicated product of two n x n polynomials in the Gram matrix (symmetric, commuting).
  Matrix small_product(const Matrix& a, const Matrix& b) {
    replicated(2 * cube(ops_.rows(a)));
    return ops_.symmetric_product(a, b);
  }

  // Y_r <- M Y_r on every rank, M replicated.
  void apply_left(const Matrix& m, std::vector<Matrix>& y, const Coeffs* with_identity) {
    for (std::size_t r = 0; r < y.size(); ++r) {
      flops_[r] += 2 * sq(ops_.rows(m)) * u(ops_.cols(y[r]));
      Matrix product = ops_.matmul(m, y[r]);
      if (with_identity) product = ops_.lincomb(ops_.scalar(with_identity->a), y[r], std::move(product));
      ops_.recycle(std::exchange(y[r], std::move(product)));
    }
  }

  void standard(std::vector<Matrix>& y) {
    for (int step = 0; step < cfg_.steps; ++step) {
      const Coeffs& k = cfg_.coeffs.at_step(step);
      Matrix a = reduced_gram(y);
      Matrix b = polynomial(a, k);
      ops_.recycle(std::move(a));
      apply_left(b, y, &k);  // X = a X + B X
      ops_.recycle(std::move(b));
    }
  }

  void gram(std::vector<Matrix>& y) {
    if (cfg_.steps == 0) return;
    Matrix r = reduced_gram(y);
    Matrix q;
    bool have_q = false;
    const int steps = cfg_.steps;
    for (int i = 0; i < steps; ++i) {
      const Coeffs& k = cfg_.coeffs.at_step(i);
      if (cfg_.restarts_before(i)) {
        apply_left(q, y, nullptr);  // X = Q X
        ops_.recycle(std::exchange(r, reduced_gram(y)));
        have_q = false;
      }
      Matrix z = polynomial(r, k);
      if (!have_q) {
        q = z;
        ops_.add_diagonal(q, ops_.scalar(k.a));
        have_q = true;
      } else {
        ops_.recycle(std::exchange(q, ops_.lincomb(ops_.scalar(k.a), q, small_product(z, q))));
      }
      if (i < steps - 1 && !cfg_.restarts_before(i + 1)) {
        Matrix rz = ops_.lincomb(ops_.scalar(k.a), r, small_product(z, r));
        ops_.recycle(std::exchange(r, ops_.lincomb(ops_.scalar(k.a), rz, small_product(z, rz))));
        ops_.recycle(std::move(rz));
      }
      ops_.recycle(std::move(z));
    }
    if (have_q) apply_left(q, y, nullptr);
  }

  void replicated(std::uint64_t f) {
    for (auto& x : flops_) x += f;
  }
  static std::uint64_t u(std::int64_t v) { return static_cast<std::uint64_t>(v); }
  static std::uint64_t sq(std::int64_t v) { return u(v) * u(v); }
  static std::uint64_t cube(std::int64_t v) { return u(v) * u(v) * u(v); }

  Ops& ops_;
  const NsConfig& cfg_;
  std::vector<std::uint64_t> flops_;
};

}  // namespace nsv::detail
