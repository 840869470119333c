// The extension module `_nsverify`; the package `nsverify` (python/nsverify/) wraps it with
// keyword signatures, docstrings and result objects.
#include <pybind11/pybind11.h>
#include <rapidcheck/detail/Configuration.h>

#include <iostream>
#include <sstream>

#include "check_records.hpp"
#include "errors.hpp"
#include "generators.hpp"
#include "kernel_check.hpp"
#include "reference_bindings.hpp"
#include "tp_check.hpp"

namespace {
// RapidCheck announces its global configuration (read from RC_PARAMS) on stderr the first time it
// is used. The checks pass their own parameters and print nothing unasked, so the announcement
// is swallowed here, once.
void load_rapidcheck_configuration_quietly() {
  std::ostringstream swallowed;
  auto* saved = std::cerr.rdbuf(swallowed.rdbuf());
  rc::detail::configuration();
  std::cerr.rdbuf(saved);
}
}  // namespace

PYBIND11_MODULE(_nsverify, m) {
  load_rapidcheck_configuration_quietly();
  m.doc() = "nsverify's C++ core: the reference, the shard model, the audit, and the property checks";
  nsv::python::register_error_translation();
  nsv::python::bind_reference(m);
  nsv::python::bind_check_records(m);
  nsv::python::bind_generators(m);
  nsv::python::bind_kernel_check(m);
  nsv::python::bind_tp_check(m);
}
