#include "errors.hpp"

#include <stdexcept>

#include "nsv/invalid_field.hpp"

namespace nsv::python {

void register_error_translation() {
  pybind11::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const pybind11::builtin_exception& e) {
      e.set_error();  // pybind11's own (cast errors are TypeErrors): as pybind11 translates them
    } catch (const InvalidField& e) {
      // Every keyword of the bindings is its field's name, as every flag is (flag_of_field).
      PyErr_SetString(PyExc_ValueError, (e.field() + " " + e.requirement()).c_str());
    } catch (const std::invalid_argument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::runtime_error& e) {
      // The library's runtime errors name the file or value at fault (unreadable config, a
      // malformed schedule file): bad arguments as far as a caller is concerned.
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
}

}  // namespace nsv::python
