#include "user_kernel.hpp"

#include <chrono>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "assertions.hpp"
#include "outcomes.hpp"
#include "property_run.hpp"

namespace nsv::python {
namespace {

std::string shape_text(std::int64_t rows, std::int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

// The one exception that stops the check rather than fails a case: the user's Ctrl-C. SystemExit
// fails the case like any other error (the Python layer words it, nsverify/_exits.py): a callable
// that exits must never end a check as if it had passed.
bool ends_the_check(const py::error_already_set& e) { return e.matches(PyExc_KeyboardInterrupt); }

// A result read back as `count` matrices of rows x cols (3-D when `three_d`), or a failed case
// saying what came back instead.
Batch result_of(const py::object& result, bool three_d, std::int64_t count, std::int64_t rows, std::int64_t cols) {
  bool result_3d = false;
  Batch out;
  try {
    out = batch_from(result, "the callable's result", &result_3d);
  } catch (const std::invalid_argument& e) {
    checks::fail_predicate(e.what());
  }
  const bool shape_ok = result_3d == three_d && static_cast<std::int64_t>(out.size()) == count &&
                        (out.empty() || (out[0].rows() == rows && out[0].cols() == cols));
  if (!shape_ok)
    checks::fail_predicate("the callable returned " + std::string(result_3d ? "a 3-D batch of " : "") + std::to_string(out.size()) +
                           " matrix(es) of " + (out.empty() ? std::string("?") : shape_text(out[0].rows(), out[0].cols())) +
                           " for " + (three_d ? std::to_string(count) + " of " : std::string()) + shape_text(rows, cols));
  return out;
}

// Notes what fn was handed (before the call, so that a call that raises still shows its input) and
// what it returned in the case being run, numbered by call ("call 2 input", "call 2 output"; a
// batch's matrices "call 2 input[0]", ...): a failure carries them, and the Python layer saves them
// as .npy (nsverify/_counterexamples.py).
bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
std::string note_call_inputs(const MatrixViews& inputs, bool batch) {
  int calls = 0;
  for (const auto& [name, m] : checks::case_log().matrices.of_this_case())
    if (name.rfind("call ", 0) == 0 && (ends_with(name, " input") || ends_with(name, " input[0]"))) ++calls;
  const std::string call = "call " + std::to_string(calls + 1);
  for (std::size_t i = 0; i < inputs.size(); ++i)
    checks::note_matrix(call + " input" + (batch ? "[" + std::to_string(i) + "]" : ""), *inputs[i]);
  return call;
}
void note_call_outputs(const std::string& call, const MatrixViews& outputs, bool batch) {
  for (std::size_t i = 0; i < outputs.size(); ++i)
    checks::note_matrix(call + " output" + (batch ? "[" + std::to_string(i) + "]" : ""), *outputs[i]);
}

// The one matrix of a single call's result (moved out, not copied).
MatD single_result(const py::object& result, const MatD& g) {
  return std::move(result_of(result, false, 1, g.rows(), g.cols()).at(0));
}

}  // namespace

py::object call_user_code(const std::function<py::object()>& call) {
  if (interrupted()) throw std::runtime_error("the check was interrupted");
  py::gil_scoped_acquire gil;
  const auto start = std::chrono::steady_clock::now();
  struct Clock {
    std::chrono::steady_clock::time_point start;
    ~Clock() {
      callable_clock().seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ++callable_clock().calls;
    }
  } clock{start};
  try {
    return call();
  } catch (py::error_already_set& e) {
    const std::string text = std::string("the callable raised ") + e.what();
    if (ends_the_check(e)) remember_interrupt(std::move(e));
    throw std::runtime_error(text);
  }
}

UserKernel::UserKernel(py::object adapter, std::string name, bool batched, bool float64)
    : adapter_(std::move(adapter)), name_(std::move(name)), batched_(batched), float64_(float64) {}

unsigned UserKernel::abilities() const { return checks::kCallerBuffer | (batched_ ? checks::kBatches : 0u); }

MatD UserKernel::run(const MatD& g, const NsConfig&) const {
  if (checks::walking_to_the_replayed_case()) return g;  // a stand-in: the user's code runs on the replayed case only
  py::gil_scoped_acquire gil;  // held until every Python object of the call is released
  const std::string call = note_call_inputs({&g}, false);
  const py::object out = call_user_code([&] { return adapter_.attr("call")(matrix_to_array(g, float64_)); });
  MatD result = single_result(out, g);
  note_call_outputs(call, {&result}, false);
  return result;
}

Batch UserKernel::run_batch(const Batch& b, const NsConfig&) const {
  if (checks::walking_to_the_replayed_case()) return b;  // a stand-in: the user's code runs on the replayed case only
  py::gil_scoped_acquire gil;  // held until every Python object of the call is released
  const std::string call = note_call_inputs(views_of(b), true);
  const py::object out = call_user_code([&] { return adapter_.attr("call")(batch_to_array(b, float64_)); });
  Batch result = result_of(out, true, static_cast<std::int64_t>(b.size()), b.at(0).rows(), b.at(0).cols());
  note_call_outputs(call, views_of(result), true);
  return result;
}

MatD UserKernel::run_at_offset(const MatD& g, int offset, const NsConfig&) const {
  if (checks::walking_to_the_replayed_case()) return g;  // a stand-in: the user's code runs on the replayed case only
  py::gil_scoped_acquire gil;  // held until every Python object of the call is released
  const std::string call = note_call_inputs({&g}, false);
  const py::object out = call_user_code([&] { return adapter_.attr("call_at_offset")(matrix_to_array(g, float64_), offset); });
  MatD result = single_result(out, g);
  note_call_outputs(call, {&result}, false);
  return result;
}

checks::ObservedCall UserKernel::run_observed(const MatD& g, const NsConfig&) const {
  if (checks::walking_to_the_replayed_case()) return checks::ObservedCall{g, g, false};  // a stand-in: the user's code runs on the replayed case only
  py::gil_scoped_acquire gil;  // held until every Python object of the call is released
  const std::string noted = note_call_inputs({&g}, false);
  const py::object seen = call_user_code([&] { return adapter_.attr("call_observed")(matrix_to_array(g, float64_)); });
  const py::tuple t = seen.cast<py::tuple>();
  checks::ObservedCall call;
  call.output = single_result(t[0], g);
  call.input_after = matrix_from(t[1], "the input after the call");
  call.output_aliases_input = t[2].cast<bool>();
  note_call_outputs(noted, {&call.output}, false);
  return call;
}

}  // namespace nsv::python
