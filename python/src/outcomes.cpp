#include "outcomes.hpp"

#include <pybind11/numpy.h>

#include <iomanip>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace nsv::python {
namespace py = pybind11;
namespace {

std::string hex(double v) {
  std::ostringstream s;
  s << std::hexfloat << v;
  return s.str();
}

// The noted matrices of a failing case, as float64 arrays (np.save-able by the Python layer).
py::dict matrices_of(const checks::FailureDetail& f) {
  py::dict out;
  for (const auto& [name, m] : f.matrices) {
    py::array_t<double> a({static_cast<py::ssize_t>(m.rows()), static_cast<py::ssize_t>(m.cols())});
    double* dst = a.mutable_data();
    for (Eigen::Index i = 0; i < m.rows(); ++i)
      for (Eigen::Index j = 0; j < m.cols(); ++j) *dst++ = m(i, j);
    out[py::str(name)] = a;
  }
  return out;
}

py::dict detail_of(const checks::FailureDetail& f) {
  py::dict x;
  x["input"] = f.input;
  x["kind"] = std::string(checks::kind_name(f.kind));
  if (f.kind == checks::FailureDetail::Kind::bits) {
    x["shape"] = py::make_tuple(f.rows, f.cols);
    x["index"] = py::make_tuple(f.row, f.col);
    x["mismatches"] = f.mismatches;
    x["a"] = f.a;
    x["b"] = f.b;
    x["a_hex"] = hex(f.a);
    x["b_hex"] = hex(f.b);
    x["ulps"] = f.ulps ? py::object(py::int_(*f.ulps)) : py::object(py::none());
  } else if (f.kind == checks::FailureDetail::Kind::bound) {
    x["measured"] = f.measured;
    x["bound"] = f.bound;
    x["derivation"] = f.derivation;
  }
  x["matrices"] = matrices_of(f);
  return x;
}

std::optional<py::error_already_set>& kept_interrupt() {
  static std::optional<py::error_already_set> kept;
  return kept;
}

}  // namespace

CallableClock& callable_clock() {
  static CallableClock clock;
  return clock;
}

void remember_interrupt(py::error_already_set&& e) {
  if (!kept_interrupt()) kept_interrupt().emplace(std::move(e));
}
bool interrupted() { return kept_interrupt().has_value(); }
void rethrow_interrupt() {
  if (!kept_interrupt()) return;
  py::error_already_set e = std::move(*kept_interrupt());
  kept_interrupt().reset();
  throw e;
}

py::dict run_user_property(const std::string& name, const std::function<void()>& body, const checks::RunSettings& settings,
                           const checks::ReplayMap& replays) {
  callable_clock() = {};
  checks::PropertyOutcome o;
  {
    py::gil_scoped_release free;
    o = checks::run_property(name, body, settings, replays.empty() ? nullptr : &replays);
  }
  rethrow_interrupt();
  py::dict d = to_python(o);
  d["seconds_in_callable"] = callable_clock().seconds;
  d["calls"] = callable_clock().calls;
  return d;
}

checks::ReplayMap replay_map(const std::string& replay, const std::function<bool(const std::string&)>& is_property,
                             const std::string& check) {
  if (replay.empty()) return {};
  checks::ReplayMap map = checks::parse_replay(replay);
  std::string names;
  for (const auto& [name, reproduce] : map) {
    if (is_property(name)) return map;
    names += (names.empty() ? "" : ", ") + name;
  }
  throw std::invalid_argument("replay: the string reproduces " + names + ", which is no property of " + check);
}

py::dict to_python(const checks::PropertyOutcome& o) {
  py::dict d;
  d["id"] = o.id;
  d["status"] = std::string(checks::status_name(o.status));
  d["cases"] = o.cases;
  d["cases_checked"] = o.cases_checked;
  d["message"] = o.message;
  py::list ce;
  for (const auto& [type, value] : o.counterexample) ce.append(py::make_tuple(type, value));
  d["counterexample"] = ce;
  py::dict classes;
  for (const auto& [label, count] : o.classes) classes[py::str(label)] = count;
  d["classes"] = classes;
  d["worst_ratio"] = o.worst_ratio;
  d["replay"] = o.replay;
  d["seconds"] = o.seconds;
  d["detail"] = o.detail ? py::object(detail_of(*o.detail)) : py::object(py::none());
  return d;
}

}  // namespace nsv::python
