// The rank measures the report gives of gradients (lib/include/nsv/rank_measures.hpp).
#include <boost/test/unit_test.hpp>
#include <Eigen/Eigenvalues>
#include <cmath>

#include "check.hpp"
#include "generators/normals.hpp"
#include "nsv/rank_measures.hpp"

namespace nsv::checks {

BOOST_AUTO_TEST_SUITE(foundation)

BOOST_AUTO_TEST_SUITE(stable_and_effective_rank)

// A matrix c U V^T with k orthonormal columns in U and V has k singular values equal to c and the
// rest 0, so both the stable rank and the effective rank are k. rank_measures takes the singular
// values as square roots of the eigenvalues of the short side's Gram matrix G = fl(a^T a) (or
// fl(a a^T)). How far they can be from that is bounded from quantities the test measures:
//   - U, V are orthonormal up to eta_gen = ||U^T U - I||_F + ||V^T V - I||_F, so c U V^T has k
//     singular values in c (1 +- eta_gen) and the rest 0 (sigma_i(X S Y^T) lies between
//     sigma_min(X) sigma_min(Y) sigma_i(S) and ||X|| ||Y|| sigma_i(S));
//   - forming a = fl(c U V^T) adds ||E||_2 <= gamma_k c k (c a power of two, k-term dot products):
//     with d0 = eta_gen + 2 k^2 u, sigma_i(a) is in c (1 +- d0) (i <= k) or <= c d0;
//   - forming G adds ||F||_2 <= gamma_m ||a||_F^2 <= 1.01 m u k c^2 (1 + d0)^2 (m the long side);
//   - the eigen solver (the same one, with vectors, whose eigenvalues take the same path) leaves a
//     residual R = G W - W L and W orthonormal up to eta_w: every computed eigenvalue is within
//     (||R||_F + 2 eta_w l_max) / (1 - eta_w) of an eigenvalue of G.
// With D = (gram error + eigen error) / c^2, the k top values are within c d_top, d_top = 1.01 (d0 +
// D), and the tail values are <= c d_tail, d_tail = sqrt(d0^2 + D). Then
//   stable rank:    |srank - k| <= 4 k d_top + (min - k) d_tail^2;
//   effective rank: the k main p_i move by <= q = 2 d_top + (min - k) d_tail / k relative, each of
//                   the min - k tail p_j <= d_tail / k adds -p_j log p_j <= t = (d_tail / k)
//                   log(k / d_tail) (t = 1/e once d_tail / k >= 1/e), so
//                   |erank - k| <= k (2 q (1 + log k) + (min - k) t) (1.01 for the second order).
// Negative control: raising one of the k singular values to 10 c moves both measures below k by
// far more than the bound (srank to (k + 99) / 100, erank below k), so the bound can tell k equal
// values from unequal ones.
double orthonormality_defect(const MatD& q) {
  return (q.transpose() * q - MatD::Identity(q.cols(), q.cols())).norm();
}

NSV_PROPERTY(rank_measures_count_k_equal_singular_values_as_k, ()) {
  const auto m = *rc::gen::inRange<Eigen::Index>(2, 25), n = *rc::gen::inRange<Eigen::Index>(2, 25);
  const Eigen::Index min_side = std::min(m, n);
  const auto k = *rc::gen::inRange<Eigen::Index>(1, min_side + 1);
  const double c = std::ldexp(1.0, *rc::gen::inRange(-20, 21));
  const std::vector<double> z = *gaussians(static_cast<std::size_t>((m + n) * k));
  detail::NormalStream normals{z};
  const MatD u = detail::orthonormal_columns(normals.matrix(m, k)), v = detail::orthonormal_columns(normals.matrix(n, k));
  // Premise: the draw spans k dimensions (a shrunk draw of zeros gives repeated or zero columns,
  // whose product has fewer than k singular values at c: not the matrix the claim is about).
  const double eta_gen = orthonormality_defect(u) + orthonormality_defect(v);
  RC_PRE(eta_gen < 1e-12);
  const MatD a = c * u * v.transpose();
  const Eigen::MatrixXd g = m >= n ? Eigen::MatrixXd(a.transpose() * a) : Eigen::MatrixXd(a * a.transpose());
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(g);
  const Eigen::MatrixXd w = eig.eigenvectors();
  const double eta_w = orthonormality_defect(w), l_max = eig.eigenvalues().cwiseAbs().maxCoeff();
  const double residual = (g * w - w * eig.eigenvalues().asDiagonal()).norm();
  const double unit = std::ldexp(1.0, -53);
  const auto kd = static_cast<double>(k), mind = static_cast<double>(min_side), longd = static_cast<double>(std::max(m, n));
  const double d0 = eta_gen + 2 * kd * kd * unit;
  const double gram_error = 1.01 * longd * unit * kd * c * c * (1 + d0) * (1 + d0);
  const double eigen_error = (residual + 2 * eta_w * l_max) / (1 - eta_w);
  const double big_d = (gram_error + eigen_error) / (c * c);
  const double d_top = 1.01 * (d0 + big_d), d_tail = std::sqrt(d0 * d0 + big_d);
  const double srank_bound = 4 * kd * d_top + (mind - kd) * d_tail * d_tail;
  const double q = 2 * d_top + (mind - kd) * d_tail / kd;
  const double t = d_tail / kd < std::exp(-1.0) ? (d_tail / kd) * std::log(kd / d_tail) : std::exp(-1.0);
  const double erank_bound = kd * (2 * q * (1 + std::log(kd)) + (mind - kd) * t) * 1.01;
  const RankMeasures got = rank_measures(a);
  RC_LOG() << m << "x" << n << " k=" << k << " c=" << exact(c) << " d_top=" << d_top << " d_tail=" << d_tail << ": stable "
           << exact(got.stable_rank) << " (bound " << srank_bound << "), effective " << exact(got.effective_rank) << " (bound "
           << erank_bound << ")\n";
  RC_ASSERT(got.min_side == min_side);
  RC_ASSERT(std::abs(got.stable_rank - kd) <= srank_bound);
  RC_ASSERT(std::abs(got.effective_rank - kd) <= erank_bound);
  if (k >= 2) {  // the negative control: one of the k singular values raised to 10 c
    const RankMeasures x = rank_measures(a + 9 * c * u.col(0) * v.col(0).transpose());
    RC_ASSERT(kd - x.stable_rank > 10 * srank_bound);
    RC_ASSERT(kd - x.effective_rank > 10 * erank_bound);
  }
}

BOOST_AUTO_TEST_CASE(a_zero_matrix_has_no_rank_measure) {
  BOOST_CHECK_THROW(rank_measures(MatD::Zero(3, 4)), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()

}  // namespace nsv::checks
