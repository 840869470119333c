#pragma once
// Test matrices with controlled singular spectra. One description (Spectrum) serves every test
// matrix of the project, drawn two ways:
//   make_matrix          from a seed, reproducibly on any platform (a 64-bit Mersenne Twister and
//                        our own Box-Muller: std::normal_distribution's output is not specified by
//                        the standard and differs between library implementations); the kinds a
//                        user names on the command line.
//   property generators  from RapidCheck's values (checks/generators/matrices.hpp), so that a
//                        counterexample shrinks; every kind but file.
#include <Eigen/Core>
#include <cstdint>
#include <string>

#include "nsv/matrix.hpp"

namespace nsv {

struct Spectrum {
  enum class Kind { gaussian, lowrank, powerlaw, ill_conditioned, integer_valued, file } kind = Kind::gaussian;
  std::int64_t rank = 1;         // lowrank: the rank (at most the short side)
  double alpha = 1.0;            // powerlaw: sigma_i = (i+1)^-alpha
  double log10_condition = 3.0;  // ill_conditioned: sigma_i geometric from 1 down to 10^-this
  int scale_exponent = 0;        // every kind: the matrix is multiplied by 2^scale_exponent
  std::string path;              // file

  // gaussian | lowrank:R | powerlaw:ALPHA | ill_conditioned:LOG10_CONDITION | file:PATH, as
  // parse_spectrum reads them; integer_valued, which only the property generators draw, prints
  // in the same style, and a scaled spectrum ends in *2^E.
  std::string text() const;
};

// gaussian, lowrank, powerlaw, ill_conditioned, integer_valued, file.
const char* spectrum_kind_name(Spectrum::Kind);

// Reads gaussian | lowrank:R | powerlaw:ALPHA | ill_conditioned:LOG10_CONDITION | file:PATH. Throws std::invalid_argument on a
// malformed name (saying the accepted forms).
Spectrum parse_spectrum(const std::string&);

// sigma_i / sigma_0 for i < count, as a powerlaw or ill_conditioned spectrum prescribes them.
Eigen::VectorXd designed_singular_values(const Spectrum&, std::int64_t count);

// An m x n fp32-valued matrix (values rounded to float, as a gradient would be) with the given
// spectrum: gaussian, lowrank, powerlaw, ill_conditioned or file, unscaled (the other kinds and scales are the
// property generators'; std::invalid_argument). For file:PATH the file's matrix is returned and
// must have shape m x n unless m and n are 0 (then any shape is accepted).
MatD make_matrix(const Spectrum&, std::int64_t rows, std::int64_t cols, std::uint64_t seed);

MatD gaussian_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed);

// U diag(sigma) V^T in float64, U (rows x k) and V (cols x k) with orthonormal columns drawn
// from `seed` (k = sigma.size() <= min(rows, cols)): a matrix with exactly these singular values
// before any rounding.
MatD matrix_with_singular_values(const Eigen::VectorXd& sigma, std::int64_t rows, std::int64_t cols, std::uint64_t seed);

}  // namespace nsv
