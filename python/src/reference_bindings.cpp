#include "reference_bindings.hpp"

#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include "arrays.hpp"
#include "nsv/analysis/audit.hpp"
#include "nsv/backend.hpp"
#include "nsv/config_schema.hpp"
#include "nsv/cost_model.hpp"
#include "nsv/input_limits.hpp"
#include "nsv/invalid_field.hpp"
#include "nsv/layout.hpp"
#include "nsv/metrics.hpp"
#include "nsv/analysis/model_config.hpp"
#include "nsv/render/audit.hpp"
#include "nsv/render/comparison_json.hpp"
#include "nsv/render/config_json.hpp"
#include "nsv/strategies.hpp"

namespace nsv::python {
namespace {

// nlohmann JSON (what `nsv ... --json` prints) as Python objects, through Python's json module:
// one encoder (the render library's), not a second one here.
py::object to_python(const nlohmann::json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

NsConfig config_of(const std::string& kernel, int steps, const std::string& dtype, const std::string& accumulate,
                   const std::string& products, const std::string& coeffs, const std::string& restart_at) {
  // The schema's parsing and validation, as `nsv ns`'s.
  return ns_config_from_names({kernel, steps, dtype, accumulate, products, coeffs, restart_at});
}

py::list arrays_of(const std::vector<MatD>& ms, bool float64) {
  py::list out;
  for (const MatD& m : ms) out.append(matrix_to_array(m, float64));
  return out;
}

std::vector<MatD> matrices_of(const py::sequence& seq, const std::string& name) {
  std::vector<MatD> out;
  for (std::size_t i = 0; i < seq.size(); ++i) out.push_back(matrix_from(seq[i], name + "[" + std::to_string(i) + "]"));
  return out;
}

Layout layout_of(std::int64_t dim, int tp, int axis, std::int64_t heads, std::int64_t kv_heads, std::int64_t grain,
                 HeadGeometry* geometry = nullptr) {
  if (tp < 1) throw InvalidField("tp", "must be at least 1, got " + std::to_string(tp));
  if (axis != 0 && axis != 1) throw InvalidField("axis", "must be 0 (rows) or 1 (cols), got " + std::to_string(axis));
  if (grain < 1) throw InvalidField("grain", "must be at least 1, got " + std::to_string(grain));
  const HeadGeometry geo = head_geometry(dim, heads, kv_heads, axis);
  if (geometry) *geometry = geo;
  return autotp_layout(axis, dim, tp, geo.kv_groups, grain);
}

const Backend& cpu_backend() {
  static const std::unique_ptr<Backend> b = make_cpu_backend();
  return *b;
}

void bind_config(py::module_& m) {
  m.def(
      "config_schema",
      [] {
        py::dict out;
        for (const FieldSchema& f : config_schema()) {
          py::dict field;
          field["default"] = to_python(f.default_value);
          field["choices"] = f.choices;
          out[py::str(f.field)] = field;
        }
        return out;
      },
      "Per configuration field: its default (None where the library has none) and its choices "
      "(empty: free text; coeffs also takes a file of 'a b c' lines).");
  py::class_<NsConfig>(m, "NsConfig", "A Newton-Schulz configuration (nsv ns's knobs), validated.")
      .def_property_readonly("kernel", [](const NsConfig& c) { return std::string(kernel_name(c.kernel)); })
      .def_property_readonly("steps", [](const NsConfig& c) { return c.steps; })
      .def_property_readonly("dtype", [](const NsConfig& c) { return std::string(dtype_name(c.dtype)); })
      .def_property_readonly("accumulate", [](const NsConfig& c) { return std::string(accumulate_name(c.accumulate)); })
      .def_property_readonly("products", [](const NsConfig& c) { return std::string(products_name(c.products)); })
      .def_property_readonly("coeffs", [](const NsConfig& c) { return c.coeffs.name; })
      .def_property_readonly("restart_at", [](const NsConfig& c) { return c.restart_at; })
      .def("to_dict", [](const NsConfig& c) { return to_python(config_json(c)); })
      .def("__repr__", [](const NsConfig& c) { return "NsConfig(" + config_json(c).dump() + ")"; });
  const NsConfigNames d = ns_config_names();
  m.def("config", &config_of, py::arg("kernel") = d.kernel, py::arg("steps") = d.steps, py::arg("dtype") = d.dtype,
        py::arg("accumulate") = d.accumulate, py::arg("products") = d.products, py::arg("coeffs") = d.coeffs,
        py::arg("restart_at") = d.restart_at, "The NsConfig of these knobs (nsv ns's flags), validated.");
}

void bind_ns(py::module_& m) {
  m.def(
      "ns",
      [](const py::handle& g, const NsConfig& cfg, const std::string& backend, bool allow_unnormalizable) {
        bool three_d = false;
        const Batch in = batch_from(g, "G", &three_d, Use::ns);
        for (std::size_t k = 0; k < in.size() && !allow_unnormalizable; ++k)
          require_normalizable(in[k], cfg, three_d ? "G[" + std::to_string(k) + "]" : "G");
        Batch out;
        {
          py::gil_scoped_release free;
          out = make_backend(backend)->newton_schulz(in, cfg);
        }
        const bool wide = cfg.dtype == DType::fp64;
        return three_d ? batch_to_array(out, wide) : matrix_to_array(out.at(0), wide);
      },
      py::arg("G"), py::arg("config"), py::arg("backend") = std::string(name_of(kDefaultBackend)),
      py::arg("allow_unnormalizable") = false);
  m.def("require_ns_matrix", &require_ns_matrix, py::arg("G"), py::arg("name"),
        "Raises ValueError where ns would refuse a 2-D G by its shape (empty, past the input limits), copying nothing.");
  m.def("ns_flops", [](const NsConfig& c, std::int64_t rows, std::int64_t cols) { return ns_flops(c, rows, cols); },
        py::arg("config"), py::arg("rows"), py::arg("cols"));
}

void bind_layouts(py::module_& m) {
  py::class_<Layout>(m, "Layout", "How AutoTP cuts the split axis: each rank's (begin, end) ranges.")
      .def_readonly("axis", &Layout::axis)
      .def_readonly("dim", &Layout::dim)
      .def_property_readonly("tp", &Layout::tp)
      .def_property_readonly("widths", &Layout::widths)
      .def_property_readonly("ranks",
                             [](const Layout& l) {
                               std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> r;
                               for (const auto& pieces : l.ranks) {
                                 r.emplace_back();
                                 for (const Range& p : pieces) r.back().emplace_back(p.begin, p.end);
                               }
                               return r;
                             })
      .def("__repr__", [](const Layout& l) {
        std::string w;
        for (auto x : l.widths()) w += (w.empty() ? "" : ", ") + std::to_string(x);
        return "Layout(axis=" + std::to_string(l.axis) + ", dim=" + std::to_string(l.dim) + ", widths=[" + w + "])";
      });
  m.def("autotp_layout", [](std::int64_t dim, int tp, int axis, std::int64_t heads, std::int64_t kv_heads,
                            std::int64_t grain) { return layout_of(dim, tp, axis, heads, kv_heads, grain); },
        py::arg("dim"), py::arg("tp"), py::arg("axis") = 0, py::arg("heads") = 0, py::arg("kv_heads") = 0,
        py::arg("grain") = 1);
  m.def("fused_layout", py::overload_cast<int, const std::vector<std::vector<std::int64_t>>&>(&fused_layout), py::arg("axis"),
        py::arg("part_sizes"));
  m.def("contiguous_layout", &contiguous_layout, py::arg("axis"), py::arg("sizes"));
  m.def("head_aligned_sizes", &head_aligned_sizes, py::arg("dim"), py::arg("kv_groups"), py::arg("tp"));
  m.def("grain_sizes", &grain_sizes, py::arg("dim"), py::arg("tp"), py::arg("grain"));
  // float64 in, float64 out (float32 in, float32 out): a split or an assembly never rounds.
  m.def("split", [](const py::handle& g, const Layout& l) { return arrays_of(split(matrix_from(g, "G"), l), is_float64(g, "G")); },
        py::arg("G"), py::arg("layout"));
  m.def("assemble",
        [](const py::sequence& shards, const Layout& l) {
          bool wide = false;
          for (std::size_t i = 0; i < shards.size(); ++i) wide = wide || is_float64(shards[i], "shards[" + std::to_string(i) + "]");
          return matrix_to_array(assemble(matrices_of(shards, "shards"), l), wide);
        },
        py::arg("shards"), py::arg("layout"));
}

void bind_strategies(py::module_& m) {
  m.def("strategies", [] {
    py::list out;
    for (const StrategyRecord& r : strategy_records()) {
      py::dict d;
      d["name"] = std::string(r.name);
      d["target"] = std::string(target_name(r.target));
      d["promise"] = std::string(promise_name(r.promise));
      d["summary"] = std::string(r.summary);
      out.append(d);
    }
    return out;
  });
  m.def(
      "run_strategy",
      [](const py::handle& g_in, const std::string& strategy, int tp, int axis, std::int64_t heads, std::int64_t kv_heads,
         std::int64_t grain, const std::string& target, const std::string& order, const NsConfig& cfg) {
        const MatD g = matrix_from(g_in, "G", Use::ns);
        require_normalizable(g, cfg, "G");  // every shard's norm is at most the whole's
        const Strategy s = parse_strategy(strategy);
        const Target t = target.empty() ? natural_target(s) : parse_target(target);
        HeadGeometry geo;
        const Layout layout = layout_of(axis == 0 ? g.rows() : g.cols(), tp, axis, heads, kv_heads, grain, &geo);
        StrategyRun run;
        MatD reference;
        {
          py::gil_scoped_release free;
          const ShardedMatrix sm = shard_matrix(g, layout, axis == 0 ? geo.head_dim : 0);
          run = run_strategy(s, cpu_backend(), sm, cfg, {parse_reduction_order(order), DType::fp32});
          reference = target_result(t, cpu_backend(), g, geo.head_dim, cfg);
        }
        // The comparison exactly as `nsv shard --json` writes it, plus what the ranks hold.
        nlohmann::json j = comparison_json(compare_with_target(run, reference, layout));
        j["strategy"] = strategy_name(s);
        j["target"] = target_name(t);
        j["promise"] = promise_name(t == natural_target(s) ? promise_of(s) : Promise::none);
        py::dict d = to_python(j);
        const bool wide = cfg.dtype == DType::fp64;
        d["outputs"] = arrays_of(run.outputs, wide);
        d["target_result"] = matrix_to_array(reference, wide);
        d["layout"] = layout;
        return d;
      },
      py::arg("G"), py::arg("strategy"), py::arg("tp"), py::arg("axis") = 0, py::arg("heads") = 0, py::arg("kv_heads") = 0,
      py::arg("grain") = 1, py::arg("target") = "", py::arg("reduction_order") = std::string(name_of(StrategyOptions{}.order)),
      py::arg("config"));
}

void bind_metrics(py::module_& m) {
  const auto binary = [&m](const char* name, double (*f)(const MatD&, const MatD&), const char* doc) {
    m.def(name, [f](const py::handle& a, const py::handle& b) { return f(matrix_from(a, "a"), matrix_from(b, "b")); },
          py::arg("a"), py::arg("b"), doc);
  };
  binary("rel_diff", &rel_diff, "||a - b||_F / ||b||_F (0 when both are zero, inf when only b is).");
  binary("cosine", &cosine, "<a, b> / (||a|| ||b||); 1 when both are zero.");
  binary("norm_ratio", &norm_ratio, "||a||_F / ||b||_F.");
  binary("max_abs_diff", &max_abs_diff, "max |a - b|.");
  m.def(
      "compare_bits",
      [](const py::handle& a, const py::handle& b, const std::string& ulp_dtype) {
        const ElementDiff d = compare_bits(matrix_from(a, "a"), matrix_from(b, "b"), parse_named<DType>(ulp_dtype, "ulp_dtype"));
        py::dict out;
        out["identical"] = d.identical;
        out["mismatches"] = d.mismatches;
        out["row"] = d.row;
        out["col"] = d.col;
        out["a"] = d.a;
        out["b"] = d.b;
        out["ulps"] = d.ulps == kNoUlpDistance ? py::object(py::none()) : py::object(py::int_(d.ulps));
        out["description"] = d.describe();
        return out;
      },
      py::arg("a"), py::arg("b"), py::arg("ulp_dtype") = "fp32");
  m.def("singular_values", [](const py::handle& a) {
    const Eigen::VectorXd s = singular_values(matrix_from(a, "a", Use::ns));
    return std::vector<double>(s.data(), s.data() + s.size());
  }, py::arg("a"));
  m.def("polar_factor", [](const py::handle& a) { return matrix_to_array(polar_factor(matrix_from(a, "a", Use::ns)), true); },
        py::arg("a"));
}

CostParams cost_of(double latency_us, double link_gbps, double tflops) {
  CostParams c{latency_us, link_gbps, tflops};
  c.validate();
  return c;
}

void bind_cost_and_audit(py::module_& m) {
  m.def(
      "plan_strategy",
      [](const std::string& strategy, std::int64_t rows, std::int64_t cols, int tp, int axis, std::int64_t heads,
         std::int64_t kv_heads, std::int64_t grain, const NsConfig& cfg, double latency_us, double link_gbps, double tflops) {
        const CostParams cost = cost_of(latency_us, link_gbps, tflops);
        HeadGeometry geo;
        const Layout layout = layout_of(axis == 0 ? rows : cols, tp, axis, heads, kv_heads, grain, &geo);
        const StrategyPlan plan = plan_strategy(parse_strategy(strategy), layout, rows, cols, axis == 0 ? geo.head_dim : 0, cfg);
        py::list ranks;
        for (const RankCost& r : rank_costs(plan, cost)) {
          py::dict d;
          d["flops"] = r.flops;
          d["bytes_sent"] = r.bytes_sent;
          d["bytes_received"] = r.bytes_received;
          d["messages"] = r.messages;
          d["extra_memory_bytes"] = r.extra_memory;
          d["compute_s"] = r.compute_s;
          d["latency_s"] = r.latency_s;
          d["bandwidth_s"] = r.bandwidth_s;
          d["time_s"] = r.time_s();
          ranks.append(d);
        }
        py::dict calls;
        for (Collective k : kAllCollectives) calls[py::str(std::string(collective_name(k)))] = plan.ledger.count(k);
        py::dict out;
        out["strategy"] = strategy;
        out["collectives"] = calls;
        out["ranks"] = ranks;
        return out;
      },
      py::arg("strategy"), py::arg("rows"), py::arg("cols"), py::arg("tp"), py::arg("axis") = 0, py::arg("heads") = 0,
      py::arg("kv_heads") = 0, py::arg("grain") = 1, py::arg("config"), py::arg("latency_us") = 5.0,
      py::arg("link_gbps") = 450.0, py::arg("tflops") = 989.0);
  m.def(
      "audit",
      [](const std::string& config_path, int tp, std::int64_t grain, const NsConfig& cfg, double latency_us,
         double link_gbps, double tflops, bool measure, std::int64_t measure_max_elements, std::uint64_t seed) {
        AuditOptions o;
        o.tp = tp;
        o.grain = grain;
        o.ns = cfg;
        o.cost = cost_of(latency_us, link_gbps, tflops);
        o.measure = measure;
        o.measure_max_elements = measure_max_elements;
        o.seed = seed;
        nlohmann::json j;
        {
          py::gil_scoped_release free;
          j = audit_json(run_audit(load_model_config(config_path), o));
        }
        return to_python(j);
      },
      py::arg("config_path"), py::arg("tp") = 8, py::arg("grain") = 1, py::arg("config"), py::arg("latency_us") = 5.0,
      py::arg("link_gbps") = 450.0, py::arg("tflops") = 989.0, py::arg("measure") = false,
      py::arg("measure_max_elements") = std::int64_t{1} << 21, py::arg("seed") = 0);
}

}  // namespace

void bind_reference(py::module_& m) {
  bind_config(m);
  bind_ns(m);
  bind_layouts(m);
  bind_strategies(m);
  bind_metrics(m);
  bind_cost_and_audit(m);
}

}  // namespace nsv::python
