#pragma once
// Runs one property of a user's implementation through RapidCheck (its generators, shrinking and
// reproduce strings), and records what a failure needs to be read: the shrunk counterexample,
// the worst element with both values in hexfloat and its ULP distance (or the measured figure,
// its bound and the bound's derivation), and a replay string that runs exactly that case again.
#include <rapidcheck.h>

#include <pybind11/pybind11.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nsv/dtype.hpp"
#include "nsv/matrix.hpp"

namespace nsv::python {

struct RunSettings {
  std::uint64_t seed = 0;
  int max_success = 100;
  int max_size = 100;
};

// RapidCheck's reproduce map, as RC_PARAMS="reproduce=..." spells it.
using ReplayMap = std::unordered_map<std::string, rc::detail::Reproduce>;
ReplayMap parse_replay(const std::string& replay);  // throws std::invalid_argument
std::string replay_string(const std::string& property, const rc::detail::Reproduce&);

// What the failing case compared, recorded by the fail_* helpers below (the last one recorded
// is the shrunk counterexample's: RapidCheck accepts every failing shrink and ends on one).
struct FailureDetail {
  std::string input;  // the case's input: shape, kind, spectrum, layout (note_input)
  std::string kind;   // "bits", "bound" or "predicate"
  // bits: the worst element
  std::int64_t rows = 0, cols = 0, row = -1, col = -1, mismatches = 0;
  double a = 0, b = 0;  // the worst element: the first and the second matrix compared
  std::optional<std::uint64_t> ulps;  // none when a NaN is involved
  // bound
  double measured = 0, bound = 0;
  std::string derivation;
};

struct PropertyOutcome {
  std::string id;
  std::string status;  // holds | fails | inconclusive
  int cases = 0;       // successful cases (before the failure, for a failing property)
  std::string message;
  std::vector<std::pair<std::string, std::string>> counterexample;
  std::vector<std::pair<std::string, int>> classes;  // RC_CLASSIFY/RC_TAG distribution
  std::optional<FailureDetail> detail;
  std::string replay;
  double seconds = 0, seconds_in_callable = 0;
  long calls = 0;
};

// `replay`: run only the reproduced case (the map's entry for `id`).
PropertyOutcome run_property(const std::string& id, const std::function<void()>& body, const RunSettings&,
                             const ReplayMap* replay);
pybind11::dict to_python(const PropertyOutcome&);

// Inside a property: say what the case drew (kept with a failure), and fail with a recorded
// detail. Each throws RapidCheck's failure, as RC_FAIL does.
void note_input(std::string description);
[[noreturn]] void fail_bits(const std::string& what, const MatD& a, const MatD& b, DType ulp_dtype);
[[noreturn]] void fail_bound(const std::string& what, double measured, double bound, const std::string& derivation);
[[noreturn]] void fail_predicate(const std::string& what);

// RC_ASSERT_BIT_IDENTICAL's claim for a user's output: same shape, every element the same bits.
void assert_bit_identical(const std::string& what, const MatD& a, const MatD& b, DType ulp_dtype);
void assert_within(const std::string& what, double measured, double bound, const std::string& derivation);

// Time spent in the user's callable, for the outcome (and the overhead benchmark).
struct CallableClock {
  double seconds = 0;
  long calls = 0;
};
CallableClock& callable_clock();

// Formats a value as hexfloat (exact) and decimal (readable).
std::string exact(double v);

}  // namespace nsv::python
