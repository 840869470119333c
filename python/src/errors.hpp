#pragma once
// Library errors as Python exceptions: ValueError with the message the CLI prints, the field
// named as the Python keyword that sets it (`tp must be between 1 and 4096, got 0`; the CLI says
// `--tp ...`).
#include <pybind11/pybind11.h>

namespace nsv::python {

void register_error_translation();

}  // namespace nsv::python
