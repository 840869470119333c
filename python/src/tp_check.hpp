#pragma once
// check_tp: the TP claims and the diagnosis (checks/tp_catalogue.hpp) run on a user's TP function.
#include <pybind11/pybind11.h>

namespace nsv::python {

void bind_tp_check(pybind11::module_& m);

}  // namespace nsv::python
