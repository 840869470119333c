#include "property_run.hpp"

#include "shrink_budget.hpp"

#include "nsv/invalid_field.hpp"

#include <rapidcheck/detail/Configuration.h>
#include <rapidcheck/detail/TestListenerAdapter.h>

#include <chrono>
#include <optional>
#include <stdexcept>

namespace nsv::checks {
namespace {

// RapidCheck's listener interface, silenced: the outcome is returned, not printed.
struct Quiet : rc::detail::TestListenerAdapter {};

std::string joined(const std::vector<std::string>& tags) {
  std::string label;
  for (const auto& t : tags) label += (label.empty() ? "" : ", ") + t;
  return label;
}

}  // namespace

std::string_view status_name(Status s) {
  switch (s) {
    case Status::holds: return "holds";
    case Status::fails: return "fails";
    case Status::nothing_checked: return "nothing checked";
    case Status::inconclusive: return "inconclusive";
  }
  return "inconclusive";
}

ReplayMap parse_replay(const std::string& replay) {
  ReplayMap map;
  try {
    map = rc::detail::configFromString(replay).reproduce;
  } catch (const std::exception& e) {
    throw std::invalid_argument("replay: not a replay string of nsverify (expected 'reproduce=...' as a failure reports it): " +
                                std::string(e.what()));
  }
  if (map.empty())
    throw std::invalid_argument("replay: the string reproduces no case (expected 'reproduce=...' as a failure reports it), got '" +
                                replay + "'");
  return map;
}

std::string replay_string(const std::string& property, const rc::detail::Reproduce& r) {
  rc::detail::Configuration c;
  c.reproduce[property] = r;
  return rc::detail::configToMinimalString(c);
}

void RunSettings::validate() const {
  if (!(shrink_seconds >= 0 && shrink_seconds <= kMaxShrinkSeconds))
    throw InvalidField("shrink_seconds", "must be between 0 (report the first failing case as found) and " +
                                             std::to_string(static_cast<int>(kMaxShrinkSeconds)) + " seconds, got " +
                                             std::to_string(shrink_seconds));
}

PropertyOutcome run_property(const std::string& id, const std::function<void()>& body, const RunSettings& settings,
                             const ReplayMap* replay) {
  settings.validate();
  rc::detail::TestMetadata metadata;
  metadata.id = id;
  metadata.description = id;
  rc::detail::TestParams params;
  params.seed = settings.seed;
  params.maxSuccess = settings.max_success;
  params.maxSize = settings.max_size;
  Quiet listener;
  case_log() = {};
  // Counted for passing cases before the first failure only: shrinking runs more cases after it,
  // some of them passing, and the count a failing property reports is the one before it (as
  // RapidCheck's numSuccess is).
  int cases_checked = 0;
  ShrinkBudget budget(settings.shrink_seconds);
  const auto one_case = [&] {
    case_log().checked = 0;
    budget.run(body);
    if (case_log().checked > 0 && !budget.failed()) ++cases_checked;
  };
  const auto start = std::chrono::steady_clock::now();
  const auto property = rc::detail::toProperty(one_case);
  const rc::detail::TestResult result = replay ? rc::detail::checkProperty(property, metadata, params, listener, *replay)
                                               : rc::detail::checkProperty(property, metadata, params, listener);
  case_log().matrices = {};  // the noted matrices' storage goes with the run (a failure has its own copies)
  PropertyOutcome out;
  out.id = id;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.worst_ratio = case_log().worst_ratio;
  rc::detail::SuccessResult success;
  rc::detail::FailureResult failure;
  rc::detail::GaveUpResult gave_up;
  rc::detail::Error error;
  if (result.match(success)) {
    out.cases = success.numSuccess;
    out.cases_checked = cases_checked;
    out.status = cases_checked > 0 ? Status::holds : Status::nothing_checked;
    if (out.status == Status::nothing_checked)
      out.message = "none of the " + std::to_string(out.cases) + " cases lay inside the property's premise: it checked nothing";
    for (const auto& [tags, count] : success.distribution) out.classes.emplace_back(joined(tags), count);
  } else if (result.match(failure)) {
    out.status = Status::fails;
    out.cases = failure.numSuccess;
    out.cases_checked = cases_checked;
    out.message = failure.description;
    out.counterexample = failure.counterExample;
    out.detail = case_log().last_failure;
    out.replay = replay_string(id, failure.reproduce);
    if (ShrinkBudget::spent(failure.description) && budget.last_failure()) {
      out.message = budget.last_failure()->first;
      out.counterexample = {{"the last failing case", budget.last_failure()->second}};
    }
  } else if (result.match(gave_up)) {
    out.cases = gave_up.numSuccess;
    out.message = "gave up: " + gave_up.description;
  } else if (result.match(error)) {
    out.message = "error: " + error.description;
  }
  return out;
}

}  // namespace nsv::checks
