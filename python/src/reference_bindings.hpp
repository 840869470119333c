#pragma once
// The reference as Python functions: NS with every knob of `nsv ns`, AutoTP layouts, every
// strategy on in-process ranks, the metrics, the cost model and the audit.
#include <pybind11/pybind11.h>

namespace nsv::python {

void bind_reference(pybind11::module_& m);

}  // namespace nsv::python
