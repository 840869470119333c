#pragma once
// check_kernel: the kernel catalogue (checks/kernel_catalogue.hpp) run on a user's callable.
#include <pybind11/pybind11.h>

namespace nsv::python {

void bind_kernel_check(pybind11::module_& m);

}  // namespace nsv::python
