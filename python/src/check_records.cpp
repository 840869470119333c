#include "check_records.hpp"

#include <pybind11/stl.h>

#include <string>

namespace nsv::python {
namespace {

nlohmann::json json_of(const py::handle& v, const std::string& field) {
  if (v.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  if (py::isinstance<py::int_>(v)) {
    if (v.cast<py::int_>() < py::int_(0)) return v.cast<std::int64_t>();
    try {
      return v.cast<std::uint64_t>();
    } catch (const py::cast_error&) {
      throw InvalidField(field, "is too large for a 64-bit integer: " + py::repr(v).cast<std::string>());
    }
  }
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    nlohmann::json out = nlohmann::json::array();
    for (const py::handle& item : v) out.push_back(json_of(item, field));
    return out;
  }
  if (PyCallable_Check(v.ptr())) return "<callable>";
  throw InvalidField(field, "must be a number, a string, a bool, None or a list of them, got " +
                                py::str(py::type::of(v).attr("__name__")).cast<std::string>());
}

py::object to_python(const nlohmann::json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

py::dict record_dict(const checks::CheckRecord& r) {
  py::list fields;
  for (const checks::CheckField& f : r.fields)
    fields.append(py::dict(py::arg("name") = std::string(f.name), py::arg("type") = std::string(checks::field_type_name(f.type)),
                           py::arg("default") = to_python(f.default_value), py::arg("nullable") = f.nullable,
                           py::arg("min") = f.min, py::arg("max") = f.max, py::arg("choices") = f.choices,
                           py::arg("help") = std::string(f.help)));
  return py::dict(py::arg("name") = std::string(r.name), py::arg("summary") = std::string(r.summary), py::arg("fields") = fields);
}

}  // namespace

nlohmann::json settings_from_python(const checks::CheckRecord& record, const py::dict& given) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, value] : given) {
    const std::string name = py::str(key).cast<std::string>();
    j[name] = json_of(value, name);
  }
  return record.settings_of(j);
}

void bind_check_records(py::module_& m) {
  m.def(
      "check_records",
      [] {
        py::list out;
        for (const checks::CheckRecord& r : checks::check_records()) out.append(record_dict(r));
        return out;
      },
      "Every check's record: name, summary, fields (name, type, default, nullable, min, max, choices, help).");
  m.def(
      "check_settings",
      [](const std::string& kind, const py::dict& given) {
        return to_python(settings_from_python(checks::check_record(kind), given));
      },
      py::arg("kind"), py::arg("given"), "Every field of the kind's record from `given`, validated (ValueError naming the field).");
}

}  // namespace nsv::python
