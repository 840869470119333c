#pragma once
// A time budget for shrinking a failing property, which RapidCheck does not have: after the first
// failing case, cases run for at most `seconds` more; later ones are discarded, so RapidCheck keeps
// the last failing case it shrank to. RapidCheck then evaluates that case once more for its
// description, which the spent budget discards too: a caller whose failure description is the
// spent budget's (spent()) reports last_failure() instead. Used by check_kernel and check_tp
// (property_run.cpp: the user's shrink_seconds) and by the property binaries (properties/check.hpp:
// NSV_SHRINK_SECONDS), so that a failure found at a large shape, or on a slow case, reports
// instead of running into a timeout.
#include <rapidcheck.h>

#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "assertions.hpp"

namespace nsv::checks {

class ShrinkBudget {
 public:
  explicit ShrinkBudget(double seconds) : seconds_(seconds) {}

  // One case of `body`, or a discard once the budget is spent; a failure is noted with the case's
  // input (case_log) and rethrown.
  template <class Body>
  void run(Body&& body) {
    if (first_failure_ && std::chrono::duration<double>(Clock::now() - *first_failure_).count() > seconds_)
      RC_DISCARD(kSpent);
    try {
      body();
    } catch (const rc::detail::CaseResult& r) {
      if (r.type == rc::detail::CaseResult::Type::Failure) note(r.description);
      throw;
    } catch (const rc::GenerationFailure&) {
      throw;  // a draw that could not be made: a discard, not a failure
    } catch (const std::exception& e) {
      note("Exception thrown with message:\n" + std::string(e.what()));
      throw;
    }
  }

  // Whether a case has failed yet (cases after the first failure are the shrinking's).
  bool failed() const { return first_failure_.has_value(); }
  // Whether RapidCheck's failure description is the spent budget's discard.
  static bool spent(const std::string& description) { return description.find(kSpent) != std::string::npos; }
  // The last failing case's description and input.
  const std::optional<std::pair<std::string, std::string>>& last_failure() const { return last_failure_; }

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr const char* kSpent = "the shrinking budget is spent: the last failing case stands";

  void note(std::string description) {
    if (!first_failure_) first_failure_ = Clock::now();
    last_failure_.emplace(std::move(description), case_log().input);
  }

  double seconds_;
  std::optional<Clock::time_point> first_failure_;
  std::optional<std::pair<std::string, std::string>> last_failure_;
};

}  // namespace nsv::checks
