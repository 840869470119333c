#pragma once
// The check records (checks/check_record.hpp) as Python sees them: the records as dicts (for the
// signatures, the CLI's flags and the docs) and a settings dict validated against its record.
#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>

#include "check_record.hpp"

namespace nsv::python {
namespace py = pybind11;

// Every field of `record` from the keyword arguments a front end was given (None, bools, ints,
// floats, strings, lists and tuples of them; a callable stands for itself as "<callable>"),
// validated by the record: InvalidField (ValueError in Python) naming the field at fault.
nlohmann::json settings_from_python(const checks::CheckRecord& record, const py::dict& given);

void bind_check_records(py::module_& m);
}  // namespace nsv::python
