#pragma once
// The property generators' rules and matrix builder (checks/generators/), for nsverify.hypothesis_strategies:
// the same draws give the same matrix as the suite's RapidCheck generator.
#include <pybind11/pybind11.h>

namespace nsv::python {
namespace py = pybind11;
void bind_generators(py::module_& m);
}  // namespace nsv::python
