#include "nsv/rank_measures.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <functional>

#include "nsv/invalid_field.hpp"

namespace nsv {
namespace {

// Singular values in decreasing order, as the square roots of the eigenvalues of the Gram matrix
// of the short side (symmetric QR: backward stable, and much cheaper than a Jacobi SVD).
// Not Eigen's BDCSVD, wrong on matrices with exactly repeated singular values
// (nsv/lapack_spectra.hpp; rank_measures_count_k_equal_singular_values_as_k draws them). The
// price: a singular value below sqrt(n u) s_1 is computed with an absolute error of about that
// size, which moves the effective rank by ~1e-4 at most (derivation in that property).
Eigen::VectorXd singular_values_via_gram(const MatD& m) {
  const Eigen::MatrixXd g = m.rows() >= m.cols() ? Eigen::MatrixXd(m.transpose() * m) : Eigen::MatrixXd(m * m.transpose());
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(g, Eigen::EigenvaluesOnly);
  Eigen::VectorXd s = eig.eigenvalues().cwiseMax(0.0).cwiseSqrt();
  std::sort(s.data(), s.data() + s.size(), std::greater<double>());
  return s;
}

}  // namespace

RankMeasures rank_measures(const MatD& m) {
  const Eigen::VectorXd s = singular_values_via_gram(m);
  const double total = s.sum();
  if (!(total > 0)) throw InvalidField("matrix", "must have a nonzero singular value to have a rank measure");
  double entropy = 0;
  for (const double v : s)
    if (v > 0) entropy -= (v / total) * std::log(v / total);
  RankMeasures r;
  r.stable_rank = s.squaredNorm() / (s(0) * s(0));
  r.effective_rank = std::exp(entropy);
  r.min_side = s.size();
  return r;
}

}  // namespace nsv
