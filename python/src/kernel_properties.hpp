#pragma once
// check_kernel's properties: the reference's kernel properties (properties/kernel_*.cpp), drawn
// from the same generators (properties/generators/), asserted on the user's callable.
#include <pybind11/pybind11.h>

namespace nsv::python {

void bind_kernel_check(pybind11::module_& m);

}  // namespace nsv::python
