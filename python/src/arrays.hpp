#pragma once
// numpy arrays in and out of the library's matrices. In: float32 or float64, 2-D (one matrix)
// or 3-D (a batch), any strides (C order, Fortran order, views, negative strides); the values
// are copied, so the library never sees the caller's memory. Out: C-ordered float32 arrays
// (float64 where the computation was fp64), which hold every value the library computed exactly.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "nsv/matrix.hpp"

namespace nsv::python {

namespace py = pybind11;

// What an array is read for, judged by the library's input limits (nsv/input_limits.hpp) from its
// shape before a value is copied: any call (`copy`: a float64 copy within the limits) or
// Newton-Schulz and the spectra (`ns`: also not empty, NS's working memory within the limits).
enum class Use { copy, ns };

// `name` is the argument's name in messages: "G: expected a 2-D array, got shape (3,)".
// Whether obj (as matrix_from reads it) is float64: results derived from it keep its precision.
bool is_float64(const py::handle& obj, const std::string& name);
MatD matrix_from(const py::handle& array, const std::string& name, Use use = Use::copy);
// A 2-D array is a batch of one; *three_d (if given) says whether the input was 3-D.
Batch batch_from(const py::handle& array, const std::string& name, bool* three_d = nullptr, Use use = Use::copy);
// The checks matrix_from(array, name, Use::ns) makes, without the copy: for a front end that makes
// its own copy (nsverify.torch.run_tp).
void require_ns_matrix(const py::handle& array, const std::string& name);

// The matrices of a batch as views: a copy of a large matrix costs its page faults.
using MatrixViews = std::vector<const MatD*>;
MatrixViews views_of(const Batch& b);

py::array matrix_to_array(const MatD& m, bool float64);
// Stacked into one 3-D array; every matrix must have the same shape.
py::array batch_to_array(const Batch& b, bool float64);

}  // namespace nsv::python
