// report.json's "gram_stability": the statistics the section's prose cites, from the study's rows.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

#include "nsv/engine/gram_stability.hpp"
#include "nsv/schedule_theory.hpp"

namespace nsv::engine {
namespace {

using nlohmann::json;

// The shape the FLOP costs are quoted for: a 1024 x 4096 matrix (aspect 4, DeepSpeed's typical
// MLP shape ratio).
constexpr std::int64_t kCostRows = 1024, kCostCols = 4096;

const std::vector<int> kDeepSpeedRestarts{2};

// A row's configuration as the tables name it: the restart list of the gram kernel, or "standard".
std::string schedule_of(const GramStabilityRow& r) { return r.kernel == Kernel::gram ? restarts_text(r.restart_at) : "standard"; }

json number(double v) { return std::isfinite(v) ? json(v) : json(v > 0 ? "inf" : "nan"); }

// The order "first" means: fewest steps, then the smallest matrix (elements, then rows), then
// the spectrum in the grid's order, then the seed.
auto first_key(const GramStabilitySpec& spec, const GramStabilityRow& r) {
  const auto at = std::find(spec.spectra.begin(), spec.spectra.end(), r.spectrum) - spec.spectra.begin();
  return std::make_tuple(r.steps, r.rows * r.cols, r.rows, at, r.seed);
}

std::uint64_t cost(const GramStabilitySpec& spec, const std::string& schedule, int steps) {
  NsConfig c;
  c.coeffs = resolve_schedule(spec.coeffs);
  c.steps = steps;
  if (schedule == "standard") {
    c.kernel = Kernel::standard;
  } else {
    c.kernel = Kernel::gram;
    c.restart_at = parse_restarts(schedule);
  }
  return ns_flops(c, kCostRows, kCostCols);
}

// The largest value the exact map reaches on (0, 1] over 1..max_steps steps: the top of the band
// every singular value of an exact-arithmetic output lies in (sampled densely: 20000 points).
double band_top(const GramStabilitySpec& spec) {
  const CoeffSchedule coeffs = resolve_schedule(spec.coeffs);
  double top = 0;
  for (int i = 1; i <= 20000; ++i) {
    double x = i / 20000.0;
    for (int s = 0; s < spec.max_steps; ++s) {
      const Coeffs& k = coeffs.at_step(s);
      x = x * (k.a + k.b * x * x + k.c * x * x * x * x);
      top = std::max(top, x);
    }
  }
  return top;
}

json failure_json(const GramStabilityRow& r, const std::vector<GramStabilityRow>& rows) {
  int failing = 0, cases = 0, shape_failing = 0, shape_cases = 0;
  for (const auto& o : rows) {
    if (o.kernel != r.kernel || o.dtype != r.dtype || o.restart_at != r.restart_at || o.steps != r.steps) continue;
    ++cases;
    failing += o.blowup;
    if (o.rows == r.rows && o.cols == r.cols && o.spectrum == r.spectrum) {
      ++shape_cases;
      shape_failing += o.blowup;
    }
  }
  return {{"steps", r.steps},
          {"rows", r.rows},
          {"cols", r.cols},
          {"spectrum", r.spectrum},
          {"seed", r.seed},
          {"finite", r.finite},
          {"norm", number(r.norm)},
          {"norm_bound", r.norm_bound},
          {"factor", number(r.norm / r.norm_bound)},
          {"failing_at_these_steps", failing},
          {"cases_at_these_steps", cases},
          {"same_input_class_failing", shape_failing},
          {"same_input_class_cases", shape_cases}};
}

}  // namespace

json gram_stability_stats(const GramStabilitySpec& spec, const std::vector<GramStabilityRow>& rows, const json& stress) {
  const CoeffSchedule coeffs = resolve_schedule(spec.coeffs);
  const double x_star = repelling_fixed_point(coeffs.at_step(spec.max_steps - 1));
  json out = {{"grid", spec.to_json()},
              {"cases", rows.size()},
              {"x_star", x_star},
              {"delta", x_star - 1},
              {"band_top", band_top(spec)},
              {"cost_shape", {kCostRows, kCostCols}}};

  // Per configuration (schedule) and dtype: blow-ups, cases, the first failing step count.
  std::vector<std::string> order;
  for (const auto& r : spec.restarts) order.push_back(restarts_text(r));
  order.emplace_back("standard");
  std::map<std::pair<std::string, DType>, std::tuple<int, int, std::optional<int>>> tally;
  std::map<DType, std::optional<GramStabilityRow>> first_ds;
  for (const auto& r : rows) {
    auto& [blowups, cases, first] = tally[{schedule_of(r), r.dtype}];
    ++cases;
    if (!r.blowup) continue;
    ++blowups;
    if (!first || r.steps < *first) first = r.steps;
    if (r.kernel == Kernel::gram && r.restart_at == kDeepSpeedRestarts) {
      auto& f = first_ds[r.dtype];
      if (!f || first_key(spec, r) < first_key(spec, *f)) f = r;
    }
  }
  json schedules = json::array();
  for (const std::string& name : order) {
    json per_dtype = json::object();
    bool clean = true;
    for (const DType d : spec.dtypes) {
      const auto& [blowups, cases, first] = tally[{name, d}];
      per_dtype[std::string(dtype_name(d))] = {{"blowups", blowups}, {"cases", cases}, {"first_failing_steps", first ? json(*first) : json(nullptr)}};
      clean = clean && blowups == 0;
    }
    schedules.push_back({{"schedule", name},
                         {"dtypes", per_dtype},
                         {"clean", clean},
                         {"flops_5", cost(spec, name, 5)},
                         {"flops_max", cost(spec, name, spec.max_steps)}});
  }
  out["schedules"] = schedules;

  json first = json::object();
  for (const DType d : spec.dtypes) {
    const auto& f = first_ds[d];
    first[std::string(dtype_name(d))] = f ? failure_json(*f, rows) : json(nullptr);
  }
  out["deepspeed_first_failure"] = first;

  // The restart lists proposed: no blow-up in the dtypes DeepSpeed computes in (fp16 where the
  // accelerator has it, fp32 otherwise), and in every dtype of the grid; fewest FLOPs at
  // max_steps, then at 5 steps.
  const std::string ds = restarts_text(kDeepSpeedRestarts);
  const auto flops = [&](const std::string& name, int steps) { return static_cast<double>(cost(spec, name, steps)); };
  const auto propose = [&](const std::vector<DType>& dtypes) -> json {
    const json* best = nullptr;
    for (const json& s : schedules) {
      if (s["schedule"] == "standard") continue;
      bool clean = true;
      for (const DType d : dtypes) clean = clean && s["dtypes"][std::string(dtype_name(d))]["blowups"].get<int>() == 0;
      const auto key = [](const json& x) { return std::make_pair(x["flops_max"].get<std::uint64_t>(), x["flops_5"].get<std::uint64_t>()); };
      if (clean && (!best || key(s) < key(*best))) best = &s;
    }
    if (!best) return nullptr;
    const std::string name = (*best)["schedule"];
    json names = json::array();
    for (const DType d : dtypes) names.push_back(std::string(dtype_name(d)));
    return {{"schedule", name},
            {"dtypes", names},
            {"over_deepspeed_5", flops(name, 5) / flops(ds, 5)},
            {"over_deepspeed_max", flops(name, spec.max_steps) / flops(ds, spec.max_steps)},
            {"over_standard_5", flops(name, 5) / flops("standard", 5)},
            {"over_standard_max", flops(name, spec.max_steps) / flops("standard", spec.max_steps)}};
  };
  std::vector<DType> deepspeed_dtypes;
  for (const DType d : spec.dtypes)
    if (d == DType::fp16 || d == DType::fp32) deepspeed_dtypes.push_back(d);
  out["proposed"] = propose(deepspeed_dtypes);
  out["proposed_all_dtypes"] = propose(spec.dtypes);
  out["deepspeed_over_standard_5"] = flops(ds, 5) / flops("standard", 5);

  // Accuracy where nothing blew up: the medians of the orthogonality error on K and the distance
  // to the polar factor, measured and in exact arithmetic, for DeepSpeed's list, the proposal and
  // the standard kernel, per dtype, at 5 and at max_steps.
  json accuracy = json::array();
  for (const std::string& name : {ds, out["proposed"].is_null() ? ds : out["proposed"]["schedule"].get<std::string>(), std::string("standard")})
    for (const DType d : spec.dtypes)
      for (const int steps : {5, spec.max_steps}) {
        std::vector<double> orth, orth_exact, polar, polar_exact;
        for (const auto& r : rows)
          if (schedule_of(r) == name && r.dtype == d && r.steps == steps && !r.blowup) {
            orth.push_back(r.orth_error);
            orth_exact.push_back(r.orth_error_exact);
            polar.push_back(r.polar_distance);
            polar_exact.push_back(r.polar_distance_exact);
          }
        const auto median = [](std::vector<double> v) {
          if (v.empty()) return json(nullptr);
          std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
          return json(v[v.size() / 2]);
        };
        accuracy.push_back({{"schedule", name}, {"dtype", std::string(dtype_name(d))}, {"steps", steps}, {"runs", orth.size()},
                            {"orth_error", median(orth)}, {"orth_error_exact", median(orth_exact)},
                            {"polar_distance", median(polar)}, {"polar_distance_exact", median(polar_exact)}});
      }
  out["accuracy"] = accuracy;

  // The example: a rank-1 2 x 16 input, 8 steps, DeepSpeed's kernel.
  json example = json::object();
  for (const auto& r : rows)
    if (r.rows == 2 && r.cols == 16 && r.spectrum == "lowrank:1" && r.steps == 8 && r.kernel == Kernel::gram &&
        r.restart_at == kDeepSpeedRestarts) {
      json& e = example[std::string(dtype_name(r.dtype))];
      if (e.is_null()) e = {{"cases", 0}, {"blowups", 0}, {"non_finite", 0}, {"largest_finite_norm", 0.0}};
      e["cases"] = e["cases"].get<int>() + 1;
      e["blowups"] = e["blowups"].get<int>() + r.blowup;
      e["non_finite"] = e["non_finite"].get<int>() + !r.finite;
      if (r.finite) e["largest_finite_norm"] = std::max(e["largest_finite_norm"].get<double>(), r.norm);
    }
  out["issue_example"] = example;
  out["stress"] = stress;
  return out;
}

}  // namespace nsv::engine
