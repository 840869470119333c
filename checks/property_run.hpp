#pragma once
// Runs one property through RapidCheck (its generators, shrinking and reproduce strings) for any
// front end — the gate's Boost harness, the Python module, `nsv check` — and returns what
// happened as data: how many cases ran and how many of them asserted anything (a case outside
// every premise asserts nothing: a property that checked no case did not pass), the shrunk
// counterexample with the detail its failing assertion recorded (assertions.hpp), the largest
// measured/bound of its bounded assertions, and a replay string that runs exactly that case again.
#include <rapidcheck.h>

#include <cstdint>
#include <functional>
#include <ostream>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "assertions.hpp"

namespace nsv::checks {

struct RunSettings {
  std::uint64_t seed = 0;
  int max_success = 100;
  int max_size = 100;
  // Shrinking stops trying smaller cases this long after the first failure: the counterexample is
  // then the smallest failing case found so far (still a real, replayable failure). Each shrink
  // step reruns the implementation and the bound's own computations; a matrix of a few hundred
  // elements has as many shrink candidates, which without a budget can take minutes. The shape and
  // spectrum are drawn (and shrunk) first, so a few seconds bring the case to its smallest shape.
  // 0: no shrinking, the first failing case is reported as found (a large input fails at once).
  double shrink_seconds = 5;

  static constexpr double kMaxShrinkSeconds = 3600;
  // Throws nsv::InvalidField naming shrink_seconds when it is not in [0, kMaxShrinkSeconds].
  void validate() const;
};

// RapidCheck's reproduce map, as RC_PARAMS="reproduce=..." spells it.
using ReplayMap = std::unordered_map<std::string, rc::detail::Reproduce>;
// Throws std::invalid_argument saying what is wrong with the string.
ReplayMap parse_replay(const std::string& replay);
std::string replay_string(const std::string& property, const rc::detail::Reproduce&);

enum class Status {
  holds,         // every case passed, and at least one asserted something
  fails,         // a case failed: the shrunk counterexample is recorded
  nothing_checked,  // every case lay outside the property's premise: it checked nothing
  inconclusive,  // RapidCheck gave up (too many discarded cases) or its machinery erred
};
std::string_view status_name(Status);
inline std::ostream& operator<<(std::ostream& os, Status s) { return os << status_name(s); }

struct PropertyOutcome {
  std::string id;
  Status status = Status::inconclusive;
  int cases = 0;          // successful cases (before the failure, for a failing property)
  int cases_checked = 0;  // of those, the ones that asserted something
  std::string message;
  std::vector<std::pair<std::string, std::string>> counterexample;  // RapidCheck's (type, value) pairs
  std::vector<std::pair<std::string, int>> classes;                 // RC_CLASSIFY/RC_TAG distribution
  std::optional<FailureDetail> detail;
  double worst_ratio = 0;  // the largest measured/bound of the run's bounded assertions
  std::string replay;
  double seconds = 0;
};

// True while a replay walks RapidCheck's shrink path to its case. An exec-style property's shrinks
// are found by running its body, so the walk runs the body once per step on the way: for its draws
// only. An implementation that runs a user's code then hands back its input as a stand-in
// (the identity), so that the user's code runs on the replayed case alone.
bool walking_to_the_replayed_case();

// `replay`: run only the reproduced case (the map's entry for `id`). Exceptions other than
// RapidCheck's own failures (a std::exception from the implementation under test) fail the case
// with their message, as RapidCheck does.
PropertyOutcome run_property(const std::string& id, const std::function<void()>& body, const RunSettings&,
                             const ReplayMap* replay);

}  // namespace nsv::checks
