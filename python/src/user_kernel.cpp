#include "user_kernel.hpp"

#include <pybind11/numpy.h>

#include <chrono>
#include <stdexcept>

#include "property_runner.hpp"

namespace nsv::python {
namespace {

// Times the user's code (the GIL wait included: it is the price of calling Python).
class Timed {
 public:
  Timed() : start_(std::chrono::steady_clock::now()) {}
  ~Timed() {
    callable_clock().seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    ++callable_clock().calls;
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

std::string shape_text(std::int64_t rows, std::int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

}  // namespace

std::string python_error_text(const py::error_already_set& e) { return std::string("the callable raised ") + e.what(); }

Batch UserKernel::call(const py::object& array, bool three_d, std::int64_t count, std::int64_t rows, std::int64_t cols) const {
  py::object result;
  {
    const Timed timed;
    result = fn_(array, steps_);
  }
  bool result_3d = false;
  Batch out = batch_from(result, "the callable's result", &result_3d);
  const bool shape_ok = result_3d == three_d && static_cast<std::int64_t>(out.size()) == count &&
                        (out.empty() || (out[0].rows() == rows && out[0].cols() == cols));
  if (!shape_ok)
    fail_predicate("the callable returned " + std::string(result_3d ? "a 3-D batch of " : "") +
                   std::to_string(out.size()) + " matrix(es) of " +
                   (out.empty() ? std::string("?") : shape_text(out[0].rows(), out[0].cols())) + " for " +
                   (three_d ? std::to_string(count) + " of " : std::string()) + shape_text(rows, cols));
  return out;
}

MatD UserKernel::operator()(const MatD& g) const {
  py::gil_scoped_acquire gil;
  try {
    return call(matrix_to_array(g, float64_), false, 1, g.rows(), g.cols()).at(0);
  } catch (const py::error_already_set& e) {
    throw std::runtime_error(python_error_text(e));
  }
}

Batch UserKernel::batched(const Batch& b) const {
  py::gil_scoped_acquire gil;
  try {
    return call(batch_to_array(b, float64_), true, static_cast<std::int64_t>(b.size()), b.at(0).rows(), b.at(0).cols());
  } catch (const py::error_already_set& e) {
    throw std::runtime_error(python_error_text(e));
  }
}

MatD UserKernel::at_offset(const MatD& g, int offset) const {
  py::gil_scoped_acquire gil;
  try {
    const py::array flat = matrix_to_array(MatD(g).reshaped<Eigen::RowMajor>(1, g.size()), float64_);
    const py::module_ np = py::module_::import("numpy");
    py::object buffer = np.attr("zeros")(offset + g.size(), flat.dtype());
    py::object window = buffer[py::slice(offset, offset + g.size(), 1)];
    window.attr("__setitem__")(py::ellipsis(), flat.attr("reshape")(-1));
    return call(window.attr("reshape")(g.rows(), g.cols()), false, 1, g.rows(), g.cols()).at(0);
  } catch (const py::error_already_set& e) {
    throw std::runtime_error(python_error_text(e));
  }
}

std::vector<MatD> UserTpUpdate::operator()(const std::vector<MatD>& shards, const std::function<py::object()>& make_spec) const {
  py::gil_scoped_acquire gil;
  try {
    py::list in;
    for (const MatD& s : shards) in.append(matrix_to_array(s, float64_));
    py::object result;
    {
      const Timed timed;
      result = fn_(in, make_spec());
    }
    const py::sequence seq = result.cast<py::sequence>();
    if (seq.size() != shards.size())
      fail_predicate("the callable returned " + std::to_string(seq.size()) + " shards for " + std::to_string(shards.size()) +
                     " ranks");
    std::vector<MatD> out;
    for (std::size_t r = 0; r < shards.size(); ++r) {
      out.push_back(matrix_from(seq[r], "the callable's result for rank " + std::to_string(r)));
      if (out.back().rows() != shards[r].rows() || out.back().cols() != shards[r].cols())
        fail_predicate("rank " + std::to_string(r) + ": the callable returned " + shape_text(out.back().rows(), out.back().cols()) +
                       " for a " + shape_text(shards[r].rows(), shards[r].cols()) + " shard");
    }
    return out;
  } catch (const py::error_already_set& e) {
    throw std::runtime_error(python_error_text(e));
  } catch (const py::cast_error&) {
    throw std::runtime_error("the callable must return a list of arrays, one per rank");
  }
}

}  // namespace nsv::python
