#pragma once
// check_tp: a user's tensor-parallel NS (or Muon update) on AutoTP's shards, its claim checked
// on generated layouts, and the diagnosis of what it computes.
#include <pybind11/pybind11.h>

namespace nsv::python {

void bind_tp_check(pybind11::module_& m);

}  // namespace nsv::python
