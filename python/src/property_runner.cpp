#include "property_runner.hpp"

#include <rapidcheck/detail/Configuration.h>
#include <rapidcheck/detail/TestListenerAdapter.h>

#include <chrono>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "nsv/metrics.hpp"

namespace nsv::python {
namespace {

struct FailureLog {
  std::string input;
  std::optional<FailureDetail> last;
};
FailureLog& failure_log() {
  static FailureLog log;
  return log;
}

[[noreturn]] void fail_with(FailureDetail d, const std::string& message) {
  d.input = failure_log().input;
  failure_log().last = std::move(d);
  throw rc::detail::CaseResult(rc::detail::CaseResult::Type::Failure, message);
}

// RapidCheck's listener interface, silenced: the outcome is returned, not printed.
struct Quiet : rc::detail::TestListenerAdapter {};

}  // namespace

CallableClock& callable_clock() {
  static CallableClock clock;
  return clock;
}

std::string exact(double v) {
  std::ostringstream s;
  s << std::hexfloat << v << std::defaultfloat << " (" << std::setprecision(9) << v << ")";
  return s.str();
}

ReplayMap parse_replay(const std::string& replay) {
  try {
    return rc::detail::configFromString(replay).reproduce;
  } catch (const std::exception& e) {
    throw std::invalid_argument("replay: not a replay string of nsverify (expected 'reproduce=...' as a failure "
                                "reports it): " + std::string(e.what()));
  }
}

std::string replay_string(const std::string& property, const rc::detail::Reproduce& r) {
  rc::detail::Configuration c;
  c.reproduce[property] = r;
  return rc::detail::configToMinimalString(c);
}

void note_input(std::string description) { failure_log().input = std::move(description); }

void fail_bits(const std::string& what, const MatD& a, const MatD& b, DType ulp_dtype) {
  FailureDetail d;
  d.kind = "bits";
  d.rows = a.rows();
  d.cols = a.cols();
  if (a.rows() != b.rows() || a.cols() != b.cols()) {
    d.kind = "predicate";
    fail_with(d, what + ": shapes differ: " + std::to_string(a.rows()) + "x" + std::to_string(a.cols()) + " vs " +
                     std::to_string(b.rows()) + "x" + std::to_string(b.cols()));
  }
  const ElementDiff diff = compare_bits(a, b, ulp_dtype);
  d.row = diff.row;
  d.col = diff.col;
  d.mismatches = diff.mismatches;
  d.a = diff.a;
  d.b = diff.b;
  if (diff.ulps != kNoUlpDistance) d.ulps = diff.ulps;
  fail_with(d, what + " (ulps in " + std::string(dtype_name(ulp_dtype)) + "): " + diff.describe());
}

void fail_bound(const std::string& what, double measured, double bound, const std::string& derivation) {
  FailureDetail d;
  d.kind = "bound";
  d.measured = measured;
  d.bound = bound;
  d.derivation = derivation;
  fail_with(d, what + " = " + exact(measured) + " exceeds the bound " + exact(bound) + "; bound: " + derivation);
}

void fail_predicate(const std::string& what) {
  FailureDetail d;
  d.kind = "predicate";
  fail_with(d, what);
}

void assert_bit_identical(const std::string& what, const MatD& a, const MatD& b, DType ulp_dtype) {
  if (a.rows() != b.rows() || a.cols() != b.cols() ||
      !compare_bits(a, b, ulp_dtype).identical)
    fail_bits(what, a, b, ulp_dtype);
}

void assert_within(const std::string& what, double measured, double bound, const std::string& derivation) {
  if (!(measured <= bound)) fail_bound(what, measured, bound, derivation);
}

PropertyOutcome run_property(const std::string& id, const std::function<void()>& body, const RunSettings& settings,
                             const ReplayMap* replay) {
  rc::detail::TestMetadata metadata;
  metadata.id = id;
  metadata.description = id;
  rc::detail::TestParams params;
  params.seed = settings.seed;
  params.maxSuccess = settings.max_success;
  params.maxSize = settings.max_size;
  Quiet listener;
  failure_log() = {};
  callable_clock() = {};
  const auto start = std::chrono::steady_clock::now();
  const auto property = rc::detail::toProperty([&body] { body(); });
  const rc::detail::TestResult result = replay ? rc::detail::checkProperty(property, metadata, params, listener, *replay)
                                               : rc::detail::checkProperty(property, metadata, params, listener);
  PropertyOutcome out;
  out.id = id;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.seconds_in_callable = callable_clock().seconds;
  out.calls = callable_clock().calls;
  rc::detail::SuccessResult success;
  rc::detail::FailureResult failure;
  rc::detail::GaveUpResult gave_up;
  rc::detail::Error error;
  if (result.match(success)) {
    out.status = "holds";
    out.cases = success.numSuccess;
    for (const auto& [tags, count] : success.distribution) {
      std::string label;
      for (const auto& t : tags) label += (label.empty() ? "" : ", ") + t;
      out.classes.emplace_back(label, count);
    }
  } else if (result.match(failure)) {
    out.status = "fails";
    out.cases = failure.numSuccess;
    out.message = failure.description;
    out.counterexample = failure.counterExample;
    out.detail = failure_log().last;
    out.replay = replay_string(id, failure.reproduce);
  } else if (result.match(gave_up)) {
    out.status = "inconclusive";
    out.cases = gave_up.numSuccess;
    out.message = "gave up: " + gave_up.description;
  } else if (result.match(error)) {
    out.status = "inconclusive";
    out.message = "error: " + error.description;
  }
  return out;
}

pybind11::dict to_python(const PropertyOutcome& o) {
  namespace py = pybind11;
  py::dict d;
  d["id"] = o.id;
  d["status"] = o.status;
  d["cases"] = o.cases;
  d["message"] = o.message;
  py::list ce;
  for (const auto& [type, value] : o.counterexample) ce.append(py::make_tuple(type, value));
  d["counterexample"] = ce;
  py::dict classes;
  for (const auto& [label, count] : o.classes) classes[py::str(label)] = count;
  d["classes"] = classes;
  d["replay"] = o.replay;
  d["seconds"] = o.seconds;
  d["seconds_in_callable"] = o.seconds_in_callable;
  d["calls"] = o.calls;
  if (o.detail) {
    const FailureDetail& f = *o.detail;
    py::dict x;
    x["input"] = f.input;
    x["kind"] = f.kind;
    if (f.kind == "bits") {
      x["shape"] = py::make_tuple(f.rows, f.cols);
      x["index"] = py::make_tuple(f.row, f.col);
      x["mismatches"] = f.mismatches;
      x["a"] = f.a;
      x["b"] = f.b;
      std::ostringstream a, b;
      a << std::hexfloat << f.a;
      b << std::hexfloat << f.b;
      x["a_hex"] = a.str();
      x["b_hex"] = b.str();
      x["ulps"] = f.ulps ? py::object(py::int_(*f.ulps)) : py::object(py::none());
    } else if (f.kind == "bound") {
      x["measured"] = f.measured;
      x["bound"] = f.bound;
      x["derivation"] = f.derivation;
    }
    d["detail"] = x;
  } else {
    d["detail"] = py::none();
  }
  return d;
}

}  // namespace nsv::python
