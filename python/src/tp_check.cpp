#include "tp_check.hpp"

#include <pybind11/stl.h>

#include <optional>

#include "arrays.hpp"
#include "check_records.hpp"
#include "nsv/config_schema.hpp"
#include "nsv/input_limits.hpp"
#include "nsv/invalid_field.hpp"
#include "nsv/mesh.hpp"
#include "outcomes.hpp"
#include "property_run.hpp"
#include "tp_catalogue.hpp"
#include "user_kernel.hpp"

namespace nsv::python {
namespace {

using checks::TpCase;

// On a mesh: each mesh rank's piece, its (begin, end) in the row-major elements of its TP shard.
std::vector<std::pair<std::int64_t, std::int64_t>> mesh_pieces(const TpCase& t) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  if (!t.dp) return out;
  const MeshLayout m = t.mesh();
  for (int r = 0; r < m.size(); ++r) out.emplace_back(m.piece(r).begin, m.piece(r).end);
  return out;
}

std::vector<std::vector<std::int64_t>> piece_shapes(const TpCase& t) {
  std::vector<std::vector<std::int64_t>> out;
  if (!t.dp) return out;
  const MeshLayout m = t.mesh();
  for (int r = 0; r < m.size(); ++r) out.push_back(m.piece_shape(r));
  return out;
}

// The `spec` argument of the user's function: a types.SimpleNamespace (GIL held).
py::object spec_of(const TpCase& t, const NsConfig& cfg) {
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> ranges;
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes;
  for (int r = 0; r < t.layout.tp(); ++r) {
    ranges.emplace_back();
    for (const Range& p : t.layout.ranks[static_cast<std::size_t>(r)]) ranges.back().emplace_back(p.begin, p.end);
    const std::int64_t w = t.layout.width(r);
    shapes.emplace_back(t.axis() == 0 ? w : t.rows, t.axis() == 0 ? t.cols : w);
  }
  return py::module_::import("types").attr("SimpleNamespace")(
      py::arg("tp") = t.layout.tp(), py::arg("axis") = t.axis(), py::arg("rows") = t.rows, py::arg("cols") = t.cols,
      py::arg("rule") = t.rule, py::arg("heads") = t.heads, py::arg("kv_heads") = t.kv_heads, py::arg("head_dim") = t.head_dim,
      py::arg("grain") = t.grain, py::arg("fused_qkv") = t.rule == "fused_qkv", py::arg("ranges") = ranges,
      py::arg("shapes") = shapes, py::arg("kernel") = std::string(kernel_name(cfg.kernel)), py::arg("steps") = cfg.steps,
      py::arg("dtype") = std::string(dtype_name(cfg.dtype)), py::arg("coeffs") = cfg.coeffs.name,
      py::arg("dp") = t.dp ? py::cast(*t.dp) : py::none(), py::arg("dp_partition") = std::string(name_of(t.dp_partition)),
      py::arg("mesh_rank_order") = "d * tp + t", py::arg("pieces") = mesh_pieces(t), py::arg("piece_shapes") = piece_shapes(t));
}

// fn(shards: list[np.ndarray], spec) -> list[np.ndarray], one per rank.
class UserTpUpdate final : public checks::TpUnderTest {
 public:
  UserTpUpdate(py::object fn, std::string name, bool float64) : fn_(std::move(fn)), name_(std::move(name)), float64_(float64) {}
  std::string name() const override { return name_; }

  std::vector<MatD> run(const TpCase& t, const std::vector<MatD>& shards, const NsConfig& cfg) const override {
    if (checks::walking_to_the_replayed_case()) return shards;  // a stand-in: the user's code runs on the replayed case only
    py::gil_scoped_acquire gil;  // held until every Python object of the call is released
    py::list in;
    if (!t.dp) return results(call(shards, t, cfg, in), shards.size());
    const MeshLayout m = t.mesh();
    return shards_from_pieces(mesh_results(call_on_mesh(m, shards, t, cfg, in), m), m);
  }

  // The arrays fn was handed, read back after the call; a result aliases its shard when numpy says
  // they share memory, or when the result list says so in an `aliased` attribute (one bool per
  // rank: nsverify.torch reports so the storage of the tensors on its ranks).
  checks::ObservedTpCall run_observed(const TpCase& t, const std::vector<MatD>& shards, const NsConfig& cfg) const override {
    if (checks::walking_to_the_replayed_case()) return {shards, shards, std::vector<bool>(shards.size(), false)};  // a stand-in
    py::gil_scoped_acquire gil;  // held until every Python object of the call is released
    py::list in;
    if (t.dp) return observed_on_mesh(t, shards, cfg, in);
    const py::object result = call(shards, t, cfg, in);
    checks::ObservedTpCall observed{results(result, shards.size()), {}, {}};
    const py::object flags = py::getattr(result, "aliased", py::none());
    for (std::size_t r = 0; r < shards.size(); ++r) {
      observed.shards_after.push_back(matrix_from(in[r], "rank " + std::to_string(r) + "'s shard after the call"));
      observed.output_aliases_shard.push_back(flags.is_none() ? aliases(result.cast<py::sequence>()[r], in[r])
                                                              : flags.cast<py::sequence>()[r].cast<bool>());
    }
    return observed;
  }

 private:
  // fn(arrays, spec) on fresh arrays, kept in `in` for the caller to read back (GIL held).
  py::object call(const std::vector<MatD>& arrays, const TpCase& t, const NsConfig& cfg, py::list& in) const {
    return call_user_code([&] {
      for (const MatD& a : arrays) in.append(matrix_to_array(a, float64_));
      return fn_(in, spec_of(t, cfg));
    });
  }

  // fn(pieces, spec) on a mesh: every mesh rank's piece of its TP shard, in its piece_shape.
  py::object call_on_mesh(const MeshLayout& m, const std::vector<MatD>& shards, const TpCase& t, const NsConfig& cfg,
                          py::list& in) const {
    const std::vector<MatD> pieces = pieces_of_shards(shards, m);
    return call_user_code([&] {
      for (int r = 0; r < m.size(); ++r)
        in.append(matrix_to_array(pieces[static_cast<std::size_t>(r)], float64_).attr("reshape")(py::cast(m.piece_shape(r))));
      return fn_(in, spec_of(t, cfg));
    });
  }

  // The shard-untouched property on a mesh: every TP shard as its pieces were left, and whether a
  // piece's result shares memory with the piece.
  checks::ObservedTpCall observed_on_mesh(const TpCase& t, const std::vector<MatD>& shards, const NsConfig& cfg, py::list& in) const {
    const MeshLayout m = t.mesh();
    const py::object result = call_on_mesh(m, shards, t, cfg, in);
    checks::ObservedTpCall observed{shards_from_pieces(mesh_results(result, m), m), {},
                                    std::vector<bool>(static_cast<std::size_t>(m.tp_size()), false)};
    std::vector<MatD> after;
    for (int r = 0; r < m.size(); ++r) {
      after.push_back(flat_of(in[static_cast<std::size_t>(r)], "mesh rank " + std::to_string(r) + "'s piece after the call"));
      if (aliases(result.cast<py::sequence>()[static_cast<std::size_t>(r)], in[static_cast<std::size_t>(r)]))
        observed.output_aliases_shard[static_cast<std::size_t>(m.tp_rank(r))] = true;
    }
    observed.shards_after = shards_from_pieces(after, m);
    return observed;
  }

  static bool aliases(const py::handle& out, const py::handle& in) {
    return py::isinstance<py::array>(out) && py::module_::import("numpy").attr("shares_memory")(out, in).cast<bool>();
  }

  // An array's elements as a 1 x n row (its row-major order).
  static MatD flat_of(const py::handle& array, const std::string& name) {
    return matrix_from(py::module_::import("numpy").attr("reshape")(array, py::make_tuple(1, -1)), name);
  }

  // One piece per mesh rank from what fn returned, each of its piece's shape, or a failed case.
  static std::vector<MatD> mesh_results(const py::object& result, const MeshLayout& m) {
    if (!py::isinstance<py::sequence>(result) || py::isinstance<py::str>(result))
      checks::fail_predicate("the callable must return a list of arrays, one per mesh rank; it returned " +
                             py::str(py::type::of(result)).cast<std::string>());
    const py::sequence seq = result.cast<py::sequence>();
    if (static_cast<int>(seq.size()) != m.size())
      checks::fail_predicate("the callable returned " + std::to_string(seq.size()) + " arrays for " + std::to_string(m.size()) +
                             " mesh ranks");
    std::vector<MatD> out;
    for (int r = 0; r < m.size(); ++r) {
      const std::string name = "the callable's result for mesh rank " + std::to_string(r);
      const py::object shape = py::getattr(seq[static_cast<std::size_t>(r)], "shape", py::none());
      const std::vector<std::int64_t> want = m.piece_shape(r);
      if (shape.is_none() || py::cast<std::vector<std::int64_t>>(py::tuple(shape)) != want)
        checks::fail_predicate(name + " has shape " + py::str(shape).cast<std::string>() + "; its piece's is " +
                               py::str(py::tuple(py::cast(want))).cast<std::string>());
      try {
        out.push_back(flat_of(seq[static_cast<std::size_t>(r)], name));
      } catch (const std::invalid_argument& e) {
        checks::fail_predicate(e.what());
      }
    }
    return out;
  }

  // One matrix per rank from what fn returned, or a failed case saying what came back instead.
  static std::vector<MatD> results(const py::object& result, std::size_t ranks) {
    if (!py::isinstance<py::sequence>(result) || py::isinstance<py::str>(result))
      checks::fail_predicate("the callable must return a list of arrays, one per rank; it returned " +
                             py::str(py::type::of(result)).cast<std::string>());
    const py::sequence seq = result.cast<py::sequence>();
    if (seq.size() != ranks)
      checks::fail_predicate("the callable returned " + std::to_string(seq.size()) + " arrays for " + std::to_string(ranks) + " ranks");
    std::vector<MatD> out;
    for (std::size_t r = 0; r < ranks; ++r) {
      try {
        out.push_back(matrix_from(seq[r], "the callable's result for rank " + std::to_string(r)));
      } catch (const std::invalid_argument& e) {
        checks::fail_predicate(e.what());
      }
    }
    return out;
  }

 private:
  py::object fn_;
  std::string name_;
  bool float64_;
};

// The semantics a target names, of the result's kind (NS results or Muon updates).
Semantics target_semantics(Target target, ResultKind kind) {
  if (target == Target::per_head) return Semantics::per_head;
  return kind == ResultKind::ns ? Semantics::whole_ns : Semantics::whole;
}

bool required(const checks::TpProperty& p, checks::TpClaim claim) {
  return claim == checks::TpClaim::exact ? p.required_by_exact : claim == checks::TpClaim::rounding && p.required_by_rounding;
}

py::dict diagnosis_of(const checks::TpDiagnosis& d) {
  py::list candidates, cases;
  for (const checks::CandidateTally& c : d.candidates)
    candidates.append(py::dict(py::arg("semantics") = std::string(c.record->label), py::arg("key") = std::string(c.record->key),
                               py::arg("cases") = c.cases, py::arg("matched") = c.matched,
                               py::arg("bit_identical") = c.bit_identical, py::arg("median_distance") = c.median_distance,
                               py::arg("max_distance") = c.max_distance));
  for (const checks::DiagnosisCase& c : d.cases) {
    py::list row;
    for (const checks::CandidateDistance& cd : c.candidates)
      row.append(py::dict(py::arg("semantics") = std::string(cd.record->label), py::arg("distance") = cd.distance,
                          py::arg("bound") = cd.bound, py::arg("bit_identical") = cd.bit_identical,
                          py::arg("matches") = cd.matches()));
    cases.append(py::dict(py::arg("case") = c.layout, py::arg("error") = c.error, py::arg("candidates") = row));
  }
  return py::dict(py::arg("candidates") = candidates, py::arg("cases") = cases);
}

py::dict check_tp(py::object fn, const std::string& name, const nlohmann::json& s) {
  const checks::TpClaim claim = parse_named<checks::TpClaim>(s.at("claim").get<std::string>());
  const NsConfig cfg = checks::ns_config_of(s);
  const checks::RunSettings settings = checks::run_settings_of(s);
  const int diagnosis_cases = s.at("diagnosis_cases").get<int>();
  const std::string replay = s.at("replay").is_null() ? std::string() : s.at("replay").get<std::string>();
  checks::TpCheck check;
  check.cfg = cfg;
  check.kind = s.at("aspect_scale").get<bool>() ? ResultKind::muon_update : ResultKind::ns;
  check.target = target_semantics(parse_named<Target>(s.at("target").get<std::string>()), check.kind);
  check.scope = checks::tp_scope_of(s);
  const SemanticsRecord& target_rec = checks::target_record(check);
  const UserTpUpdate impl(std::move(fn), name, cfg.dtype == DType::fp64);
  const checks::ReplayMap replays =
      replay_map(replay, [](const std::string& n) { return checks::find_tp_property(n) != nullptr; }, "check_tp");
  py::list properties;
  for (const checks::TpProperty& p : checks::tp_properties()) {
    if (!required(p, claim)) continue;
    py::dict d;
    const std::string why_not = checks::not_applicable(p, check);
    if (!why_not.empty()) {
      d["status"] = "not applicable";
      d["message"] = why_not;
    } else if (!replays.empty() && !replays.count(std::string(p.name))) {
      d["status"] = "not run";
    } else {
      d = run_user_property(std::string(p.name), [&] { p.body(impl, check); }, settings, replays);
    }
    d["code"] = std::string(p.code);
    d["name"] = std::string(p.name);
    d["claim"] = std::string(p.claim) + " (" + std::string(target_rec.label) + ")";
    properties.append(d);
  }
  py::dict out;
  out["properties"] = properties;
  if (replays.empty() && diagnosis_cases > 0) {
    checks::TpDiagnosis d;
    {
      py::gil_scoped_release free;
      d = checks::diagnose_tp(impl, check, diagnosis_cases, settings.seed);
    }
    rethrow_interrupt();
    out["diagnosis"] = diagnosis_of(d);
  } else {
    out["diagnosis"] = py::dict();
  }
  out["target"] = std::string(target_rec.label);
  return out;
}

}  // namespace

void bind_tp_check(py::module_& m) {
  m.def(
      "check_tp",
      [](py::object fn, const std::string& name, const std::string& kind, const py::dict& given) {
        return check_tp(std::move(fn), name, settings_from_python(checks::check_record(kind), given));
      },
      py::arg("fn"), py::arg("name"), py::arg("kind"), py::arg("settings"),
      "The TP claims and the diagnosis on fn(shards, spec), every setting from the kind's record (check_records()).");
  m.def(
      "tp_bound",
      [](const py::handle& g, const Layout& layout, const NsConfig& cfg) {
        TpCase t;
        t.layout = layout;
        MatD m = matrix_from(g, "G", Use::ns);
        require_normalizable(m, cfg, "G");
        t.rows = m.rows();
        t.cols = m.cols();
        if (layout.dim != (layout.axis == 0 ? t.rows : t.cols))
          throw InvalidField("layout", "splits an axis of " + std::to_string(layout.dim) + ", not G's " +
                                           std::to_string(layout.axis == 0 ? t.rows : t.cols));
        checks::TpBound b;
        {
          py::gil_scoped_release free;
          b = checks::tp_bound(t, m, semantics_record(Semantics::whole_ns), cfg);
        }
        return py::dict(py::arg("s") = b.s, py::arg("n1") = b.n1, py::arg("value") = b.value(),
                        py::arg("derivation") = std::string(checks::kTpBoundDerivation));
      },
      py::arg("G"), py::arg("layout"), py::arg("config"),
      "The S5 bound 2 S + N1 of a TP result of NS of the whole G against its target on `layout` (tp_catalogue.hpp).");
}

}  // namespace nsv::python
