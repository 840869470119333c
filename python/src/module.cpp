// The extension module `_nsverify`; the package `nsverify` (python/nsverify/) wraps it with
// keyword signatures, docstrings and result objects.
#include <pybind11/pybind11.h>

#include "errors.hpp"
#include "kernel_properties.hpp"
#include "reference_bindings.hpp"
#include "tp_properties.hpp"

PYBIND11_MODULE(_nsverify, m) {
  m.doc() = "nsverify's C++ core: the reference, the shard model, the audit, and the property checks";
  nsv::python::register_error_translation();
  nsv::python::bind_reference(m);
  nsv::python::bind_kernel_check(m);
  nsv::python::bind_tp_check(m);
}
