#pragma once
// Test matrices with controlled singular spectra, reproducible from a seed on any platform
// (a 64-bit Mersenne Twister and our own Box-Muller: std::normal_distribution's output is not
// specified by the standard and differs between library implementations).
#include <cstdint>
#include <string>

#include "nsv/matrix.hpp"

namespace nsv {

// gaussian | lowrank:R | powerlaw:ALPHA | file:PATH. Throws std::invalid_argument on a
// malformed name (saying the accepted forms).
struct Spectrum {
  enum class Kind { gaussian, lowrank, powerlaw, file } kind = Kind::gaussian;
  std::int64_t rank = 0;  // lowrank
  double alpha = 0.0;     // powerlaw: sigma_i = (i+1)^-alpha
  std::string path;       // file
  std::string text() const;
};
Spectrum parse_spectrum(const std::string&);

// An m x n fp32-valued matrix (values rounded to float, as a gradient would be) with the given
// spectrum. For file:PATH the file's matrix is returned and must have shape m x n unless m and
// n are 0 (then any shape is accepted).
MatD make_matrix(const Spectrum&, std::int64_t rows, std::int64_t cols, std::uint64_t seed);

MatD gaussian_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed);

}  // namespace nsv
