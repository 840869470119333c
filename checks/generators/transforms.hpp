#pragma once
// The transformations that invariance properties apply to a matrix: structured orthogonal
// transforms (structured_orthogonal.hpp: signs, a permutation, Householder reflections; O(n cols)
// to apply) and index permutations. Every random choice goes through rc::gen.
#include <rapidcheck.h>

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "generators/normals.hpp"
#include "nsv/matrix.hpp"
#include "structured_orthogonal.hpp"

namespace nsv::checks {

// A permutation of 0..n-1 (Fisher-Yates driven by generated integers).
inline rc::Gen<std::vector<Eigen::Index>> permutations(Eigen::Index n) {
  return rc::gen::map(rc::gen::container<std::vector<std::int64_t>>(static_cast<std::size_t>(n), rc::gen::resize(100, rc::gen::inRange<std::int64_t>(0, std::int64_t{1} << 30))),
                      [n](const std::vector<std::int64_t>& r) {
                        return fisher_yates(n, [&r](Eigen::Index i) { return r[static_cast<std::size_t>(i)] % (i + 1); });
                      });
}

// Householder reflections per structured transform: two already make every output entry depend
// on every input entry of its column; more would only add rounding (k (4n + 7) u64).
inline constexpr int kReflectionsPerTransform = 2;

// An n x n structured orthogonal transform. Shrinks towards the identity (the permutation
// towards 0..n-1, the signs towards +1, the reflections' vectors towards 0, which skips them).
inline rc::Gen<StructuredOrthogonal> structured_orthogonals(Eigen::Index n) {
  const auto count = static_cast<std::size_t>(n);
  return rc::gen::map(rc::gen::tuple(permutations(n), rc::gen::container<std::vector<bool>>(count, rc::gen::arbitrary<bool>()),
                                     gaussians(count * kReflectionsPerTransform)),
                      [](const std::tuple<std::vector<Eigen::Index>, std::vector<bool>, std::vector<double>>& t) {
                        return structured_orthogonal(std::get<0>(t), std::get<1>(t), std::get<2>(t));
                      });
}

// m with its rows and columns permuted: out(i, j) = m(rows[i], cols[j]).
inline MatD permuted(const MatD& m, const std::vector<Eigen::Index>& rows, const std::vector<Eigen::Index>& cols) {
  MatD out(m.rows(), m.cols());
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j) out(i, j) = m(rows[static_cast<std::size_t>(i)], cols[static_cast<std::size_t>(j)]);
  return out;
}

}  // namespace nsv::checks
