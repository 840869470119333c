#pragma once
// The user's Python implementation, called from inside a RapidCheck property: the GIL is taken
// for each call only (the checks run with it released), the input goes out as a fresh float32
// array (float64 for an fp64 check) and the result comes back through numpy, whatever array-like
// the callable returns. A Python exception, or a result of the wrong shape, fails the case (and
// so shrinks like any other failure).
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "arrays.hpp"
#include "nsv/matrix.hpp"

namespace nsv::python {

class UserKernel {
 public:
  // fn(G, steps) -> array of G's shape; `float64`: hand it float64 arrays.
  UserKernel(py::object fn, int steps, bool float64) : fn_(std::move(fn)), steps_(steps), float64_(float64) {}

  MatD operator()(const MatD& g) const;
  // One 3-D call on a batch of equally shaped matrices.
  Batch batched(const Batch& b) const;
  // The matrix placed `offset` elements into a larger buffer (a C-contiguous view that does not
  // start where an allocation starts).
  MatD at_offset(const MatD& g, int offset) const;

 private:
  Batch call(const py::object& array, bool three_d, std::int64_t count, std::int64_t rows, std::int64_t cols) const;

  py::object fn_;
  int steps_;
  bool float64_;
};

// fn(shards: list[np.ndarray], spec) -> list[np.ndarray], one per rank, each of its shard's shape.
class UserTpUpdate {
 public:
  explicit UserTpUpdate(py::object fn, bool float64) : fn_(std::move(fn)), float64_(float64) {}
  // `spec` is built under the GIL from the keyword arguments `make_spec` returns.
  std::vector<MatD> operator()(const std::vector<MatD>& shards, const std::function<py::object()>& make_spec) const;

 private:
  py::object fn_;
  bool float64_;
};

// A Python exception raised while calling user code, as the std::exception RapidCheck reports.
std::string python_error_text(const py::error_already_set& e);

}  // namespace nsv::python
