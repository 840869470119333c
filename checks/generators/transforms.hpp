#pragma once
// The transformations that invariance properties apply to a matrix: Haar-random orthogonal
// matrices and index permutations. Every random choice goes through rc::gen.
#include <rapidcheck.h>

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "generators/normals.hpp"
#include "nsv/matrix.hpp"

namespace nsv::props {

// A Haar-random n x n orthogonal matrix (QR of a gaussian matrix, R's signs folded in).
inline rc::Gen<MatD> orthogonal_matrices(Eigen::Index n) {
  return rc::gen::map(gaussians(static_cast<std::size_t>(n * n)), [n](const std::vector<double>& z) {
    detail::NormalStream normals{z};
    return detail::orthonormal_columns(normals.matrix(n, n));
  });
}

// A permutation of 0..n-1 (Fisher-Yates driven by generated integers).
inline rc::Gen<std::vector<Eigen::Index>> permutations(Eigen::Index n) {
  return rc::gen::map(rc::gen::container<std::vector<std::int64_t>>(static_cast<std::size_t>(n), rc::gen::resize(100, rc::gen::inRange<std::int64_t>(0, std::int64_t{1} << 30))),
                      [n](const std::vector<std::int64_t>& r) {
                        std::vector<Eigen::Index> perm(static_cast<std::size_t>(n));
                        for (Eigen::Index i = 0; i < n; ++i) perm[static_cast<std::size_t>(i)] = i;
                        for (Eigen::Index i = n - 1; i > 0; --i)
                          std::swap(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(r[static_cast<std::size_t>(i)] % (i + 1))]);
                        return perm;
                      });
}

// m with its rows and columns permuted: out(i, j) = m(rows[i], cols[j]).
inline MatD permuted(const MatD& m, const std::vector<Eigen::Index>& rows, const std::vector<Eigen::Index>& cols) {
  MatD out(m.rows(), m.cols());
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j) out(i, j) = m(rows[static_cast<std::size_t>(i)], cols[static_cast<std::size_t>(j)]);
  return out;
}

}  // namespace nsv::props
