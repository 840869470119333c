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
#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "nsv/dtype.hpp"
#include "nsv/matrix.hpp"

namespace nsv::checks {

// Applied by explicit loops whose order of operations is fixed by the shape: Q a by blocks of
// kColumnBlock columns (all reflections on a block while it is in cache), a Q^T row by row (each
// row a vector Q acts on). Blocks and rows are independent, so they run on OpenMP threads with the
// same bits on any thread count (the seeded matrices' bits are their seed's alone), and are cheaper
// than Eigen's products over the whole matrix with the transposes a Q^T needs.
struct StructuredOrthogonal {
  std::vector<Eigen::Index> permutation;  // (P a)(i, :) = a(permutation[i], :)
  std::vector<double> signs;              // S: +1 or -1 per row
  std::vector<Eigen::VectorXd> reflections;  // v_1 .. v_k (a zero v is skipped: H = I)

  Eigen::Index size() const { return static_cast<Eigen::Index>(permutation.size()); }

  // Q a: the reflections first (H_k, then H_{k-1}, ...), then P, then S. Templated on the scalar
  // so that a test can apply the same Q in long double.
  template <class T>
  Mat<T> times(const Mat<T>& a) const {
    Mat<T> x = a;
    const std::vector<Reflection<T>> hs = scaled_reflections<T>();
    const Eigen::Index blocks = (x.cols() + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (blocks > 1 && x.size() >= kParallelMinElements)
    for (Eigen::Index b = 0; b < blocks; ++b) reflect_columns(hs, b * kColumnBlock, std::min(kColumnBlock, x.cols() - b * kColumnBlock), x);
    Mat<T> out(x.rows(), x.cols());
#pragma omp parallel for schedule(static) if (x.size() >= kParallelMinElements)
    for (Eigen::Index i = 0; i < x.rows(); ++i)
      out.row(i) = T(signs[static_cast<std::size_t>(i)]) * x.row(permutation[static_cast<std::size_t>(i)]);
    return out;
  }

  // a Q^T = (Q a^T)^T: row r is Q acting on a's row r.
  template <class T>
  Mat<T> times_from_the_right_transposed(const Mat<T>& a) const {
    const std::vector<Reflection<T>> hs = scaled_reflections<T>();
    Mat<T> out(a.rows(), a.cols());
#pragma omp parallel if (a.size() >= kParallelMinElements)
    {
      Eigen::Matrix<T, Eigen::Dynamic, 1> x(a.cols());
#pragma omp for schedule(static)
      for (Eigen::Index r = 0; r < a.rows(); ++r) {
        x = a.row(r).transpose();
        for (auto h = hs.rbegin(); h != hs.rend(); ++h) x -= h->v * dot(h->scaled, x);
        for (Eigen::Index i = 0; i < a.cols(); ++i) out(r, i) = T(signs[static_cast<std::size_t>(i)]) * x(permutation[static_cast<std::size_t>(i)]);
      }
    }
    return out;
  }

  // ||fl(Q a) - Q a||_F / ||a||_F <= k (4n + 7) u64 (derivation above).
  double rounding() const {
    return static_cast<double>(reflections.size()) * (4.0 * static_cast<double>(size()) + 7.0) * unit_roundoff(DType::fp64);
  }

 private:
  static constexpr Eigen::Index kColumnBlock = 64;  // n x 64 doubles: 512 KiB at n = 1024, in L2
  // below (512 x 512), a team's start and join, and its wait for cores other processes hold, cost
  // more than they save (as for products: row_panels.hpp)
  static constexpr Eigen::Index kParallelMinElements = Eigen::Index{1} << 18;

  // v and fl(beta~ v), beta~ = fl(2 / fl(v^T v)), in T; zero vectors dropped (H = I).
  template <class T>
  struct Reflection {
    Eigen::Matrix<T, Eigen::Dynamic, 1> v, scaled;
  };
  template <class T>
  std::vector<Reflection<T>> scaled_reflections() const {
    std::vector<Reflection<T>> hs;
    for (const Eigen::VectorXd& v : reflections) {
      const Eigen::Matrix<T, Eigen::Dynamic, 1> vt = v.cast<T>();
      const T vv = vt.squaredNorm();
      if (vv != T(0)) hs.push_back({vt, vt * (T(2) / vv)});
    }
    return hs;
  }

  // Columns [c0, c0 + width) of x := H_1 .. H_k applied to them: per reflection, the row vector
  // w = scaled^T x (each w_j summed over the rows in order), then x -= v w.
  template <class T>
  static void reflect_columns(const std::vector<Reflection<T>>& hs, Eigen::Index c0, Eigen::Index width, Mat<T>& x) {
    T w[kColumnBlock];
    for (auto h = hs.rbegin(); h != hs.rend(); ++h) {
      std::fill(w, w + width, T(0));
      for (Eigen::Index i = 0; i < x.rows(); ++i) {
        const T s = h->scaled(i);
        const T* row = x.data() + i * x.cols() + c0;
        for (Eigen::Index j = 0; j < width; ++j) w[j] += s * row[j];
      }
      for (Eigen::Index i = 0; i < x.rows(); ++i) {
        const T vi = h->v(i);
        T* row = x.data() + i * x.cols() + c0;
        for (Eigen::Index j = 0; j < width; ++j) row[j] -= vi * w[j];
      }
    }
  }

  // sum_i a_i b_i in four interleaved partial sums, added pairwise: a fixed order (the rounding
  // bound above holds for any order) that the compiler can vectorize.
  template <class T>
  static T dot(const Eigen::Matrix<T, Eigen::Dynamic, 1>& a, const Eigen::Matrix<T, Eigen::Dynamic, 1>& b) {
    T acc[4] = {0, 0, 0, 0};
    const Eigen::Index n = a.size(), whole = n - n % 4;
    for (Eigen::Index i = 0; i < whole; i += 4)
      for (int l = 0; l < 4; ++l) acc[l] += a(i + l) * b(i + l);
    for (Eigen::Index i = whole; i < n; ++i) acc[i - whole] += a(i) * b(i);
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
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

}  // namespace nsv::checks
