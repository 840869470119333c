#include "tp_properties.hpp"

#include <pybind11/stl.h>

#include "nsv/invalid_field.hpp"
#include "nsv/metrics.hpp"
#include "property_runner.hpp"
#include "tp_cases.hpp"
#include "tp_diagnosis.hpp"
#include "user_kernel.hpp"

namespace nsv::python {
namespace {

struct TpCheck {
  UserTpUpdate fn;
  NsConfig cfg;
  Semantics target;
  AspectScale scale;  // none, or global (a Muon update: the whole matrix's aspect scale)
  int max_tp;
  std::int64_t max_side;
};

TpCase draw(const TpCheck& c, std::int64_t min_side) {
  const TpCase t = *tp_cases(c.max_tp, min_side, c.max_side, c.target == Semantics::per_head);
  note_input(t.describe());
  RC_TAG(t.rule);
  RC_CLASSIFY(t.layout.tp() >= 2, "tp >= 2");
  return t;
}

std::vector<MatD> run_user(const TpCheck& c, const TpCase& t, const MatD& g) {
  return c.fn(split(g, t.layout), [&] { return spec_of(t, c.cfg); });
}

// claim "exact": every rank's block has the bits of the same function's result with the whole
// matrix on one rank (its own whole-matrix computation: a TP result that does not depend on tp
// reproduces it bit for bit; nsverify's reference, another implementation, can agree only within
// rounding, which the diagnosis measures).
void exact_claim(const TpCheck& c) {
  const TpCase t = draw(c, 1);
  const MatD g = t.matrix();
  TpCase whole = t;
  whole.layout = contiguous_layout(t.axis(), {t.layout.dim});
  const std::vector<MatD> outputs = run_user(c, t, g);
  const std::vector<MatD> expected = split(assemble(run_user(c, whole, g), whole.layout), t.layout);
  for (int r = 0; r < t.layout.tp(); ++r)
    assert_bit_identical("rank " + std::to_string(r) + "'s block and the same rows/cols of the function's result at tp 1",
                         outputs[static_cast<std::size_t>(r)], expected[static_cast<std::size_t>(r)], c.cfg.dtype);
}

// claim "rounding": the assembled result within the S5 bound 2 S + N1 of the target (tp_diagnosis.hpp).
void rounding_claim(const TpCheck& c) {
  const TpCase t = draw(c, 8);
  const MatD g = t.matrix();
  const MatD yours = assemble(run_user(c, t, g), t.layout);
  const MatD target = assemble(candidate_blocks(t, g, c.target, c.scale, c.cfg), t.layout);
  const TpBound b = tp_bound(t, g, c.target, c.cfg);
  assert_within("rel_diff(assembled result, " + semantics_words(c.target, c.scale) + ")", rel_diff(yours, target), b.value(),
                "2 S + N1 with S = " + exact(b.s) + " (the computation's own error, max over equivalent evaluations) and "
                "N1 = " + exact(b.n1) + " (one step's reduction noise of the all-reduce loops on this layout); S5, "
                "sharding/allreduce_bound.hpp");
}

Semantics parse_target_semantics(const std::string& target) {
  if (target == "whole") return Semantics::whole;
  if (target == "per_head") return Semantics::per_head;
  throw InvalidField("target", "must be whole or per_head, got " + target);
}

py::dict check_tp(py::object fn, const NsConfig& cfg, const std::string& claim, const std::string& target, bool aspect_scale,
                  int max_tp, std::int64_t max_dim, const RunSettings& settings, int diagnosis_cases, const std::string& replay) {
  if (claim != "exact" && claim != "rounding" && claim != "none")
    throw InvalidField("claim", "must be exact, rounding or none, got " + claim);
  if (max_tp < 1 || max_tp > 64) throw InvalidField("max_tp", "must be between 1 and 64, got " + std::to_string(max_tp));
  if (max_dim < 8 || max_dim > 4096) throw InvalidField("max_dim", "must be between 8 and 4096, got " + std::to_string(max_dim));
  if (diagnosis_cases < 0) throw InvalidField("diagnosis_cases", "must be at least 0, got " + std::to_string(diagnosis_cases));
  const TpCheck check{UserTpUpdate(fn, cfg.dtype == DType::fp64), cfg, parse_target_semantics(target),
                      aspect_scale ? AspectScale::global : AspectScale::none, max_tp, max_dim};
  py::list properties;
  if (claim != "none") {
    const bool exact_claim_made = claim == "exact";
    const std::string name = exact_claim_made ? "tp_result_equals_the_target_bit_for_bit" : "tp_result_is_within_the_s5_bound_of_the_target";
    const ReplayMap replays = replay.empty() ? ReplayMap{} : parse_replay(replay);
    py::dict d;
    if (!replay.empty() && !replays.count(name)) {
      d["status"] = "not run";
    } else {
      PropertyOutcome o;
      {
        py::gil_scoped_release free;
        o = run_property(name, [&check, exact_claim_made] { exact_claim_made ? exact_claim(check) : rounding_claim(check); },
                         settings, replay.empty() ? nullptr : &replays);
      }
      d = to_python(o);
    }
    d["code"] = exact_claim_made ? "S-exact" : "S5";
    d["name"] = name;
    d["claim"] = exact_claim_made ? "every rank's block has the bits of its own result with the whole matrix on one rank"
                                  : "within 2 S + N1 of the target: " + semantics_words(check.target, check.scale);
    properties.append(d);
  }
  py::dict out;
  out["properties"] = properties;
  out["diagnosis"] = replay.empty() ? diagnose(check.fn, cfg, max_tp, max_dim, check.target == Semantics::per_head,
                                               diagnosis_cases, settings.seed)
                                    : py::dict();
  out["target"] = semantics_words(check.target, check.scale);
  return out;
}

}  // namespace

void bind_tp_check(py::module_& m) {
  m.def(
      "check_tp",
      [](py::object fn, const NsConfig& cfg, const std::string& claim, const std::string& target, bool aspect_scale, int max_tp,
         std::int64_t max_dim, std::uint64_t seed, int max_success, int max_size, int diagnosis_cases, const std::string& replay) {
        return check_tp(std::move(fn), cfg, claim, target, aspect_scale, max_tp, max_dim, RunSettings{seed, max_success, max_size},
                        diagnosis_cases, replay);
      },
      py::arg("fn"), py::arg("config"), py::arg("claim"), py::arg("target"), py::arg("aspect_scale"), py::arg("max_tp"),
      py::arg("max_dim"), py::arg("seed"), py::arg("max_success"), py::arg("max_size"), py::arg("diagnosis_cases"),
      py::arg("replay"));
}

}  // namespace nsv::python
