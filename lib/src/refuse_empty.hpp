#pragma once
// The one refusal of an empty matrix by the spectral functions (metrics.cpp, lapack_spectra.cpp).
#include <stdexcept>
#include <string>

#include "nsv/matrix.hpp"

namespace nsv::detail {

inline void refuse_empty(const MatD& m, const char* what) {
  if (m.rows() == 0 || m.cols() == 0)
    throw std::invalid_argument(std::string(what) + ": the matrix is " + std::to_string(m.rows()) + "x" + std::to_string(m.cols()) +
                                "; it must have at least one row and one column");
}

}  // namespace nsv::detail
