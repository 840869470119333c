#pragma once
// Orthogonal transforms that cost O(n * cols) to apply, with their rounding derived: what K3
// rotates a case with, and what the seeded matrix generator (generators/seeded_matrices.hpp)
// gives a designed spectrum its singular vectors with. A dense Haar-random n x n orthogonal costs
// O(n^3) to build and O(n^2 cols) to apply: at n = 14336, 1.6 GB and a 1.7-TFLOP product.
//
//     Q = S P H_1 H_2 ... H_k,   H_i = I - beta_i v_i v_i^T,  beta_i = 2 / (v_i^T v_i)
//
// S a diagonal of signs and P a permutation (both exact data movement), H_i Householder
// reflections with dense gaussian v_i: each H_i mixes every row with every other (H a =
// a - v (beta v^T a)), so a map that is only permutation- or sign-equivariant (a kernel that
// normalizes each column on its own) is caught, where signed permutations alone would let it pass.
//
// Rounding of applying Q to a (float64, first order in u = u64, any v, ||.|| Frobenius). For one
// column a of length n and one reflection, computed as w = (beta~ v)^T a, then a - v w:
//   beta~ = fl(2 / fl(v^T v)) = beta (1 + eta), |eta| <= (n + 1) u (a sum of n positive squares,
//           one division);
//   w~    = beta v^T a + e, |e| <= (n + 1) u beta |v|^T |a| + |eta| beta |v^T a|
//           <= (2n + 2) u beta ||v|| ||a||  (the scaled v rounded per element, then a dot product
//           of length n; Cauchy-Schwarz);
//   a_i - fl(v_i w~), rounded: adds u |v_i w~| + u |(H a)_i|, in norm u beta ||v||^2 ||a|| + u ||a||.
// With beta ||v||^2 = 2: ||fl(H a) - H a|| <= ((4n + 4) + 2 + 1) u ||a|| = (4n + 7) u ||a||, for
// every column, hence in the Frobenius norm of the whole block. The reflections are orthogonal,
// so the errors of k of them add: ||fl(Q a) - Q a|| <= k (4n + 7) u ||a||. (A fused multiply-add
// rounds once where this counts two: the bound still holds.)
#include <Eigen/Core>
#include <cstddef>
#include <utility>
#include <vector>

#include "nsv/dtype.hpp"
#include "nsv/matrix.hpp"

namespace nsv::props {

struct StructuredOrthogonal {
  std::vector<Eigen::Index> permutation;  // (P a)(i, :) = a(permutation[i], :)
  std::vector<double> signs;              // S: +1 or -1 per row
  std::vector<Eigen::VectorXd> reflections;  // v_1 .. v_k (a zero v is skipped: H = I)

  Eigen::Index size() const { return static_cast<Eigen::Index>(permutation.size()); }

  // Q a: the reflections first (H_k, then H_{k-1}, ...), then P, then S.
  MatD times(const MatD& a) const {
    MatD x = a;
    for (auto v = reflections.rbegin(); v != reflections.rend(); ++v) reflect(*v, x);
    MatD out(x.rows(), x.cols());
    for (Eigen::Index i = 0; i < x.rows(); ++i)
      out.row(i) = signs[static_cast<std::size_t>(i)] * x.row(permutation[static_cast<std::size_t>(i)]);
    return out;
  }

  // a Q^T = (Q a^T)^T: Q acting on a's rows (the transposes move data, exactly).
  MatD times_from_the_right_transposed(const MatD& a) const { return times(a.transpose()).transpose(); }

  // ||fl(Q a) - Q a||_F / ||a||_F <= k (4n + 7) u64 (derivation above).
  double rounding() const {
    return static_cast<double>(reflections.size()) * (4.0 * static_cast<double>(size()) + 7.0) * unit_roundoff(DType::fp64);
  }

 private:
  static void reflect(const Eigen::VectorXd& v, MatD& x) {
    const double vv = v.squaredNorm();
    if (vv == 0.0) return;
    const Eigen::RowVectorXd w = (v * (2.0 / vv)).transpose() * x;
    x.noalias() -= v * w;
  }
};

// A permutation of 0..n-1 by Fisher-Yates: for i = n-1 down to 1, position i swaps with
// index_up_to(i), a value in [0, i] (the generators' own randomness: RapidCheck integers for K3,
// Philox words for the seeded matrices).
template <class IndexUpTo>
std::vector<Eigen::Index> fisher_yates(Eigen::Index n, IndexUpTo index_up_to) {
  std::vector<Eigen::Index> perm(static_cast<std::size_t>(n));
  for (Eigen::Index i = 0; i < n; ++i) perm[static_cast<std::size_t>(i)] = i;
  for (Eigen::Index i = n - 1; i > 0; --i)
    std::swap(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(index_up_to(i))]);
  return perm;
}

// Assembles Q from its ingredients: `permutation` a permutation of 0..n-1, `sign_bits` n bits,
// `normals` k n standard normal values (the reflections' vectors, k = normals.size() / n).
inline StructuredOrthogonal structured_orthogonal(std::vector<Eigen::Index> permutation, const std::vector<bool>& sign_bits,
                                                  const std::vector<double>& normals) {
  StructuredOrthogonal q;
  const auto n = permutation.size();
  q.permutation = std::move(permutation);
  for (std::size_t i = 0; i < n; ++i) q.signs.push_back(sign_bits[i] ? -1.0 : 1.0);
  for (std::size_t first = 0; n > 0 && first + n <= normals.size(); first += n)
    q.reflections.push_back(Eigen::Map<const Eigen::VectorXd>(normals.data() + first, static_cast<Eigen::Index>(n)));
  return q;
}

}  // namespace nsv::props
