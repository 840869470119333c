#include "property_run.hpp"

#include "shrink_budget.hpp"

#include "nsv/invalid_field.hpp"

#include <rapidcheck/detail/Configuration.h>
#include <rapidcheck/detail/TestListenerAdapter.h>
#include <rapidcheck/shrinkable/Operations.h>

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

thread_local bool walking = false;

// RapidCheck's reproduce (reproduceProperty), with the walk to the case run as walking_to_the_replayed_case
// says: the property's body, and so the user's code, runs in full on the replayed case only.
rc::detail::TestResult replay_case(const rc::detail::Property& property, const std::string& id, const ReplayMap& replay) {
  const auto it = replay.find(id);
  if (it == replay.end()) {
    rc::detail::SuccessResult none;  // the replay string names another property: this one runs no case
    none.numSuccess = 0;
    return none;
  }
  const rc::detail::Reproduce& r = it->second;
  rc::Maybe<rc::Shrinkable<rc::detail::CaseDescription>> found;
  {
    walking = true;
    struct Done {
      ~Done() { walking = false; }
    } done;
    found = rc::shrinkable::walkPath(property(r.random, r.size), r.shrinkPath);
  }
  if (!found) return rc::detail::Error("the replay string's shrink path leads to no case of this property");
  const rc::detail::CaseDescription desc = found->value();
  if (desc.result.type != rc::detail::CaseResult::Type::Failure)
    return rc::detail::Error("the replayed case does not fail now" +
                             (desc.result.description.empty() ? std::string() : ": " + desc.result.description));
  rc::detail::FailureResult failure;
  failure.numSuccess = 0;
  failure.description = desc.result.description;
  failure.reproduce = r;
  failure.counterExample = desc.example();
  return failure;
}

}  // namespace

bool walking_to_the_replayed_case() { return walking; }

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
    if (walking) return body();  // the draws on the way to a replayed case: no budget, no count
    case_log().checked = 0;
    budget.run(body);
    if (case_log().checked > 0 && !budget.failed()) ++cases_checked;
  };
  const auto start = std::chrono::steady_clock::now();
  const auto property = rc::detail::toProperty(one_case);
  const rc::detail::TestResult result =
      replay ? replay_case(property, id, *replay) : rc::detail::checkProperty(property, metadata, params, listener);
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
