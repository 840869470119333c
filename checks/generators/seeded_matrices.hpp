#pragma once
// Matrices from a seed plus their structure, for the shapes people train at.
//
// Up to kElementShrinkingMaxElements elements a test matrix is drawn one RapidCheck value per
// random number (matrices.hpp), so that shrinking can zero entries one by one: on a 12 x 8
// counterexample that shows which entries matter. Above it that costs more than it gives:
// drawing one RapidCheck value per element is slow, and shrinking zeroes about one element per
// four calls of the kernel under test. So a
// larger matrix is its structure (shape, spectrum kind and parameters, scale exponent, all drawn
// and shrunk by RapidCheck as before) plus a 64-bit seed, drawn without shrinking (no seed is
// simpler than another): shrinking then acts on the structure alone (a gaussian spectrum
// before a power law, rank 1 before rank 4, scale 2^0 before 2^3, a smaller shape where the shape
// is drawn), which is also the counterexample a person can read. The switch, 128 x 128, is the
// largest matrix the gate draws (NSV_PROPS_MAX_DIM), so the gate keeps element-level shrinking.
//
// Materialized by a counter-based generator (Random123's Philox4x32-10 and its Box-Muller): value
// k of stream s of seed is a function of (seed, s, k) alone, so it is the same on every thread
// count and the values are filled in parallel. Designed spectra get their singular vectors from
// structured orthogonal transforms (structured_orthogonal.hpp): O(m n) where a Haar-random pair
// costs an O(m^3 + n^3) QR (minutes at 4096 x 14336).
#include <Random123/boxmuller.hpp>
#include <Random123/philox.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "generators/shapes.hpp"
#include "nsv/matrix.hpp"
#include "nsv/spectra.hpp"
#include "structured_orthogonal.hpp"

namespace nsv::checks {

inline constexpr Eigen::Index kElementShrinkingMaxElements = 128 * 128;

namespace seeded {

using Philox = r123::Philox4x32;

// Block b of stream s of the seed: four 32-bit words.
inline Philox::ctr_type block(std::uint64_t seed, std::uint32_t stream, std::uint64_t b) {
  const Philox::key_type key = {{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
  const Philox::ctr_type counter = {{static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(b >> 32), stream, 0}};
  return Philox()(counter, key);
}

// z[0 .. count) := standard normal values of stream s, two per block.
inline void fill_normals(std::uint64_t seed, std::uint32_t stream, double* z, std::size_t count) {
  const auto blocks = static_cast<std::int64_t>((count + 1) / 2);
#pragma omp parallel for schedule(static)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const Philox::ctr_type r = block(seed, stream, static_cast<std::uint64_t>(b));
    const r123::double2 pair = r123::boxmuller((std::uint64_t{r[0]} << 32) | r[1], (std::uint64_t{r[2]} << 32) | r[3]);
    const auto i = static_cast<std::size_t>(2 * b);
    z[i] = pair.x;
    if (i + 1 < count) z[i + 1] = pair.y;
  }
}

inline std::vector<double> normals(std::uint64_t seed, std::uint32_t stream, std::size_t count) {
  std::vector<double> z(count);
  fill_normals(seed, stream, z.data(), count);
  return z;
}

// Filled in place: a large matrix is not built twice.
inline MatD normal_matrix(std::uint64_t seed, std::uint32_t stream, Eigen::Index rows, Eigen::Index cols) {
  MatD m(rows, cols);
  fill_normals(seed, stream, m.data(), static_cast<std::size_t>(m.size()));
  return m;
}

// Value k of stream s, uniform in [0, bound) (a 32-bit word reduced by multiply-shift; the bias,
// below bound / 2^32, does not matter to a test matrix).
inline std::uint32_t uniform_below(std::uint64_t seed, std::uint32_t stream, std::uint64_t k, std::uint32_t bound) {
  return static_cast<std::uint32_t>((std::uint64_t{block(seed, stream, k)[0]} * bound) >> 32);
}

// An n x n structured orthogonal transform from streams first .. first + 2.
inline StructuredOrthogonal orthogonal(std::uint64_t seed, std::uint32_t first, Eigen::Index n, int reflections) {
  std::vector<Eigen::Index> permutation = fisher_yates(n, [&](Eigen::Index i) {
    return uniform_below(seed, first, static_cast<std::uint64_t>(i), static_cast<std::uint32_t>(i + 1));
  });
  std::vector<bool> signs(static_cast<std::size_t>(n));
  for (Eigen::Index i = 0; i < n; ++i) signs[static_cast<std::size_t>(i)] = uniform_below(seed, first + 1, static_cast<std::uint64_t>(i), 2) == 1;
  return structured_orthogonal(std::move(permutation), signs,
                               normals(seed, first + 2, static_cast<std::size_t>(n) * static_cast<std::size_t>(reflections)));
}

// Householder reflections per side of a designed spectrum's singular vectors: four, so that the
// singular vectors are dense combinations of the permuted coordinate vectors.
inline constexpr int kSpectrumReflections = 4;

// The values of a structure and a seed, before the float32 rounding and the scaling that every
// generated matrix gets (matrices.hpp: detail::finished).
inline MatD values(const Shape& s, const Spectrum& spec, std::uint64_t seed) {
  const Eigen::Index m = s.rows, n = s.cols, p = s.short_side();
  switch (spec.kind) {
    case Spectrum::Kind::gaussian: return normal_matrix(seed, 0, m, n);
    case Spectrum::Kind::lowrank: {
      const Eigen::Index r = std::min<Eigen::Index>(spec.rank, p);
      return normal_matrix(seed, 1, m, r) * normal_matrix(seed, 2, r, n) / std::sqrt(static_cast<double>(r));
    }
    case Spectrum::Kind::powerlaw:
    case Spectrum::Kind::ill_conditioned: {
      MatD d = MatD::Zero(m, n);
      d.diagonal().head(p) = designed_singular_values(spec, p);
      const StructuredOrthogonal u = orthogonal(seed, 3, m, kSpectrumReflections), v = orthogonal(seed, 6, n, kSpectrumReflections);
      // scaled so that typical entries are O(1), like the other kinds (matrices.hpp)
      return u.times(v.times_from_the_right_transposed(d)) * std::sqrt(static_cast<double>(std::max(m, n)));
    }
    case Spectrum::Kind::integer_valued: {
      MatD g(m, n);
      for (Eigen::Index i = 0; i < g.size(); ++i)
        g.data()[i] = static_cast<double>(uniform_below(seed, 9, static_cast<std::uint64_t>(i), 17)) - 8.0;  // -8 .. 8
      return g;
    }
    case Spectrum::Kind::file: break;
  }
  throw std::invalid_argument("the property generators draw no file spectrum");
}

}  // namespace seeded
}  // namespace nsv::checks
