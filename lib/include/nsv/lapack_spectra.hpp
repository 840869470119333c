#pragma once
// Singular values and the polar factor by LAPACK (OpenBLAS's blocked routines): every float64 SVD
// of the suite. Not Eigen's BDCSVD: Eigen 3.4.0's (Debian 12's) deflation is wrong on some inputs
// (fixed upstream after 3.4.0: Eigen MR 1507, issue 2491): values off by percents on graded and
// on exactly repeated spectra (rank_measures.cpp), where dgesdd, dgesvd and Jacobi agree. It is
// also slower than dgesdd, itself slower than dsyrk + dsyevd (values only).
#include <Eigen/Core>

#include "nsv/matrix.hpp"

namespace nsv {

// Singular values, decreasing, by dgesdd (values only: dbdsdc's QR path, not its divide and
// conquer): backward stable, each within p(m, n) u ||m||_2 of an exact one (LAPACK's error bound
// for the SVD). std::invalid_argument on an empty matrix, std::runtime_error when LAPACK reports
// a failure.
Eigen::VectorXd singular_values(const MatD& m);

// The polar factor U V^T of m from dgesvd's thin U and V^T (QR iteration: dgesdd's divide and
// conquer with vectors has open reports of wrong values, Reference-LAPACK issue 316), the limit the
// NS iteration approximates. Same errors as above.
MatD polar_factor(const MatD& m);

// The square roots of the eigenvalues of the short side's Gram matrix (dsyrk, then dsyevd, values
// only), decreasing, negative rounding clamped to 0: accurate near the largest singular value
// (relative error about n p u), a tiny one only to about sqrt(n p u) sigma_max. Same errors as above.
Eigen::VectorXd gram_singular_values(const MatD& m);

// Whether m's largest singular value is below t, without an eigensolver: t^2 I - G is positive
// definite for G the short side's Gram matrix exactly when sigma_max < t, and a Cholesky
// factorization (dpotrf, p^3 / 3 flops against dsyevd's tridiagonalization, 4 p^3 / 3 and half of
// it matrix-vector) succeeds exactly on positive definite matrices, to its backward error
// (c p u ||t^2 I - G||). With G's own rounding as above, the answer is right wherever sigma_max^2
// is farther than (n + p) p u sigma_max^2 + c p u t^2 from t^2, and may go either way inside.
bool largest_singular_value_below(const MatD& m, double t);

}  // namespace nsv
