#pragma once
// Singular values from LAPACK (OpenBLAS's blocked routines), for the checks at layer shapes,
// where Eigen's BDCSVD and symmetric eigensolver (unblocked, level 2) cost seconds per call.
// Measured at 512 x 1024, one thread: BDCSVD values only 94 ms, dgesdd 49 ms, dsyrk + dsyevd
// 17 ms; at 2048 x 4096: dgesdd 2.6 s, dsyrk + dsyevd 0.7 s.
#include <Eigen/Core>

#include "nsv/matrix.hpp"

namespace nsv {

// Singular values, decreasing, by dgesdd (values only): backward stable, each within
// p(m, n) u ||m||_2 of an exact one (LAPACK's error bound for the SVD). std::invalid_argument on an
// empty matrix, std::runtime_error when LAPACK reports a failure.
Eigen::VectorXd lapack_singular_values(const MatD& m);

// The square roots of the eigenvalues of the short side's Gram matrix (dsyrk, then dsyevd, values
// only), decreasing, negative rounding clamped to 0: accurate near the largest singular value
// (relative error about n p u), a tiny one only to about sqrt(n p u) sigma_max. Same errors as above.
Eigen::VectorXd gram_singular_values(const MatD& m);

}  // namespace nsv
