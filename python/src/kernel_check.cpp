#include "kernel_check.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <optional>

#include "check_records.hpp"
#include "kernel_catalogue.hpp"
#include "nsv/invalid_field.hpp"
#include "outcomes.hpp"
#include "property_run.hpp"
#include "user_kernel.hpp"

namespace nsv::python {
namespace {

using checks::KernelProperty;

py::list kernel_property_table() {
  py::list out;
  for (const KernelProperty& p : checks::kernel_properties()) {
    py::dict d;
    d["code"] = std::string(p.code);
    d["name"] = std::string(p.name);
    d["claim"] = std::string(p.claim);
    d["promise"] = std::string(checks::promise_name(p.promise));
    d["needs"] = checks::ability_words(p.needs);
    out.append(d);
  }
  return out;
}

py::dict outcome_of(const KernelProperty& p, const checks::KernelUnderTest& impl, const checks::KernelDomain& domain,
                    const checks::RunSettings& settings, const std::vector<std::string>& only, const checks::ReplayMap& replays) {
  py::dict d;
  const std::string why_not = checks::not_applicable(p, impl, domain.shape);
  const bool selected = replays.empty() ? only.empty() || std::find(only.begin(), only.end(), p.name) != only.end()
                                        : replays.count(std::string(p.name)) > 0;
  if (!why_not.empty()) {
    d["status"] = "not applicable";
    d["message"] = why_not;
  } else if (!selected) {
    d["status"] = "not run";
  } else {
    d = run_user_property(std::string(p.name), [&] { p.body(impl, domain); }, settings, replays);
  }
  d["code"] = std::string(p.code);
  d["name"] = std::string(p.name);
  d["claim"] = std::string(p.claim);
  d["promise"] = std::string(checks::promise_name(p.promise));
  return d;
}

py::list check_kernel(py::object adapter, const std::string& name, const NsConfig& cfg, bool batched, Eigen::Index max_dim,
                      std::optional<checks::Shape> shape, const checks::RunSettings& settings,
                      const std::vector<std::string>& only, const std::string& replay) {
  const UserKernel impl(std::move(adapter), name, batched, cfg.dtype == DType::fp64);
  const checks::KernelDomain domain = checks::one_configuration(cfg, max_dim, shape);
  const checks::ReplayMap replays =
      replay_map(replay, [](const std::string& n) { return checks::find_kernel_property(n) != nullptr; }, "check_kernel");
  py::list out;
  for (const KernelProperty& p : checks::kernel_properties()) out.append(outcome_of(p, impl, domain, settings, only, replays));
  return out;
}

checks::Shape pinned_shape(std::int64_t rows, std::int64_t cols) {
  const checks::ShapeKind kind = rows == cols ? checks::ShapeKind::square
                                : rows == 1  ? checks::ShapeKind::row_vector
                                : cols == 1  ? checks::ShapeKind::column_vector
                                : rows < cols ? checks::ShapeKind::wide
                                              : checks::ShapeKind::tall;
  return checks::Shape{rows, cols, kind};
}

}  // namespace

void bind_kernel_check(py::module_& m) {
  m.def("kernel_properties", &kernel_property_table, "The kernel catalogue: code, name, claim, promise, needs.");
  m.def(
      "check_kernel",
      [](py::object adapter, const std::string& name, const std::string& kind, const py::dict& given,
         const std::vector<std::string>& only) {
        const nlohmann::json s = settings_from_python(checks::check_record(kind), given);
        if (s.contains("device")) throw InvalidField("kind", "the core runs the numpy kernel record; torch's is resolved in Python");
        std::optional<checks::Shape> pinned;
        if (!s.at("shape").is_null()) pinned = pinned_shape(s.at("shape")[0].get<std::int64_t>(), s.at("shape")[1].get<std::int64_t>());
        return check_kernel(std::move(adapter), name, checks::ns_config_of(s), s.at("batched").get<bool>(),
                            s.at("max_dim").get<Eigen::Index>(), pinned, checks::run_settings_of(s), only,
                            s.at("replay").is_null() ? std::string() : s.at("replay").get<std::string>());
      },
      py::arg("adapter"), py::arg("name"), py::arg("kind"), py::arg("settings"), py::arg("properties"),
      "The kernel catalogue on an adapter, every setting from the kind's record (check_records()).");
}

}  // namespace nsv::python
