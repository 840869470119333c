#pragma once
// A property's outcome (checks/property_run.hpp) as the dict nsverify's result objects read, and
// the time spent in the user's code.
#include <pybind11/pybind11.h>

#include <functional>
#include <string>

#include "property_run.hpp"

namespace nsv::python {

pybind11::dict to_python(const checks::PropertyOutcome&);

// Runs one property of a user's implementation with the GIL released (the user's code takes it
// per call), then raises what must end the check (rethrow_interrupt): the outcome as a dict, with
// the time spent in the user's code.
pybind11::dict run_user_property(const std::string& name, const std::function<void()>& body, const checks::RunSettings&,
                                 const checks::ReplayMap& replays);

// The replay map of `replay` ({} for ""), refusing a string that reproduces none of the check's
// properties (`is_property`), naming what it reproduces and the check (`check`).
checks::ReplayMap replay_map(const std::string& replay, const std::function<bool(const std::string&)>& is_property,
                             const std::string& check);

// Time spent in the user's callable during one property (the GIL wait included: it is the price
// of calling Python), for the outcome and the overhead benchmark.
struct CallableClock {
  double seconds = 0;
  long calls = 0;
};
CallableClock& callable_clock();

// A Python exception that must end the whole check, not fail one case (KeyboardInterrupt): the first one is kept here, every later call into the user's code
// fails at once without running it (so that RapidCheck's shrinking ends quickly), and the check
// raises it when its property returns (rethrow_interrupt).
void remember_interrupt(pybind11::error_already_set&& e);
bool interrupted();
void rethrow_interrupt();  // raises the kept exception, if any, and forgets it

}  // namespace nsv::python
