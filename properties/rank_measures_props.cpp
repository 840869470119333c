// The rank measures the report gives of gradients (lib/include/nsv/rank_measures.hpp).
#include <boost/test/unit_test.hpp>
#include <Eigen/SVD>
#include <cmath>

#include "check.hpp"
#include "generators/normals.hpp"
#include "nsv/rank_measures.hpp"

namespace nsv::props {

BOOST_AUTO_TEST_SUITE(stable_and_effective_rank)

// A matrix c U V^T with k orthonormal columns in U and V has k singular values equal to c and the
// rest 0, so both the stable rank and the effective rank are k. How far the computed singular
// values s_i (the float64 SVD rank_measures uses, nsv::singular_values) can be from that is
// bounded a posteriori, from quantities the test measures, with no constant taken on trust:
//   - the generated U, V are orthonormal up to eta_gen = ||U^T U - I||_F + ||V^T V - I||_F, so the
//     exact product c U V^T has its k singular values in c (1 +- eta_gen) (multiplicative
//     perturbation: sigma_i(X S Y^T) lies between sigma_min(X) sigma_min(Y) sigma_i(S) and
//     ||X|| ||Y|| sigma_i(S)) and the rest 0;
//   - forming a = fl(c U V^T) adds ||E||_2 <= gamma_k c ||U||_F ||V||_F = gamma_k c k (c a power of
//     two, each entry a k-term dot product), gamma_k ~ k u;
//   - the SVD returns factors with a - U' S V'^T = R and U', V' orthonormal up to eta_svd; with
//     r = ||R||_F (computed; its own rounding adds n^2 u s_1) Weyl and the same multiplicative
//     bound put every s_i within r + s_i eta_svd of a singular value of a.
// So every s_i is within d = eta_gen + 2 k^2 u + (r + n^2 u s_1) / c + 2 eta_svd (relative to c) of
// c (i <= k) or of 0 (i > k). Then
//   stable rank:    k values in c(1 +- d), min - k values <= c d: |srank - k| <= 4 k d + min d^2;
//   effective rank: each p_i of the k moves by <= 2d relative, each tail p_j <= d / k adds
//                   -p_j log p_j <= (d / k) log(k / d) <= 40 d / k (log(1/d) < 40 for d > 1e-17),
//                   so |H - log k| <= 2 d (1 + log k) + 40 d min / k, and exp moves k by that
//                   factor: |erank - k| <= k (2 d (1 + log k) + 40 d min) (1 + small).
// Negative control: doubling one of the k singular values moves both measures below k by far
// more than the bound (srank to (k + 3) / 4, erank below k), so the bound can tell k equal values
// from unequal ones.
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
  const MatD a = c * u * v.transpose();
  const Eigen::BDCSVD<Eigen::MatrixXd> svd(Eigen::MatrixXd(a), Eigen::ComputeThinU | Eigen::ComputeThinV);
  const Eigen::VectorXd s = svd.singularValues();
  const double r = (a - svd.matrixU() * s.asDiagonal() * svd.matrixV().transpose()).norm();
  const double unit = std::ldexp(1.0, -53), big = static_cast<double>(std::max(m, n));
  const auto kd = static_cast<double>(k), mind = static_cast<double>(min_side);
  const double d = orthonormality_defect(u) + orthonormality_defect(v) + 2 * kd * kd * unit + (r + big * big * unit * s(0)) / c +
                   2 * (orthonormality_defect(svd.matrixU()) + orthonormality_defect(svd.matrixV()));
  const double srank_bound = 4 * kd * d + mind * d * d;
  const double erank_bound = kd * (2 * d * (1 + std::log(kd)) + 40 * d * mind) * 1.01;
  const RankMeasures got = rank_measures(a);
  RC_LOG() << m << "x" << n << " k=" << k << " c=" << exact(c) << " d=" << d << ": stable " << exact(got.stable_rank)
           << " (bound " << srank_bound << "), effective " << exact(got.effective_rank) << " (bound " << erank_bound << ")\n";
  RC_ASSERT(got.min_side == min_side);
  RC_ASSERT(std::abs(got.stable_rank - kd) <= srank_bound);
  RC_ASSERT(std::abs(got.effective_rank - kd) <= erank_bound);
  if (k >= 2) {  // the negative control: one of the k singular values doubled
    const RankMeasures w = rank_measures(a + c * u.col(0) * v.col(0).transpose());
    RC_ASSERT(kd - w.stable_rank > 10 * srank_bound);
    RC_ASSERT(kd - w.effective_rank > 10 * erank_bound);
  }
}

BOOST_AUTO_TEST_CASE(a_zero_matrix_has_no_rank_measure) {
  BOOST_CHECK_THROW(rank_measures(MatD::Zero(3, 4)), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace nsv::props
