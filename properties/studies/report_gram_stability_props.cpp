// report.json's "gram_stability" (§6b of README.md; engine/src/gram_stability_stats.cpp) from the
// study's rows, against the section's definitions evaluated here by scanning every row:
//
// RS7  per configuration (each restart list of the gram loop, and the standard loop) and dtype:
//      the blow-ups, the cases, the fewest steps that blew up; clean where no dtype blew up; the
//      FLOPs at 5 and at max_steps (ns_flops at the section's 1024 x 4096). DeepSpeed's first
//      failure per dtype: the blown-up gram row with restarts {2} that comes first by (steps,
//      elements, rows, spectrum in the grid's order, seed), and the failing and total cases of
//      its configuration at its step count, overall and in its input class. The proposals: among
//      the gram restart lists clean in the dtypes named (fp16 and fp32 of the grid; every
//      dtype), the fewest FLOPs at max_steps, then at 5, the first listed on a tie; their cost
//      ratios. The accuracy table: per listed configuration, dtype and step count (5 and
//      max_steps), the runs that did not blow up and the upper median (the element at rank n/2)
//      of each accuracy figure. The example (2 x 16, rank 1, 8 steps, DeepSpeed's list).
//      The scalar figures: x* the last step's repelling fixed point (schedule_theory, ST2),
//      delta = x* - 1, and the sampled band top between the map's value at x = 1 (one of the
//      sampled points) and the top of schedule_band's exact enclosure (ST1) over 1..max_steps.
// Rows are drawn on a small grid with random blow-ups and results that are multiples of 1/64, so
// every figure compares with ==.
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "check.hpp"
#include "studies/exact_values.hpp"
#include "nsv/coeffs.hpp"
#include "nsv/engine/gram_stability.hpp"
#include "nsv/kernels.hpp"
#include "nsv/schedule_theory.hpp"

using namespace nsv;
using namespace nsv::engine;
using nlohmann::json;
using nsv::checks::sixty_fourths;
using nsv::checks::upper_median;

namespace {

const std::vector<int> kDeepSpeedList{2};

rc::Gen<GramStabilitySpec> small_grids() {
  return rc::gen::exec([] {
    GramStabilitySpec spec;
    spec.short_sides = {2};
    spec.aspects = {1, 8};  // 2 x 16: the example
    spec.spectra = {"gaussian", "lowrank:1"};
    spec.dtypes.clear();
    for (DType d : {DType::fp16, DType::bf16, DType::fp32})
      if (*rc::gen::arbitrary<bool>()) spec.dtypes.push_back(d);
    if (spec.dtypes.empty()) spec.dtypes.push_back(*rc::gen::element(DType::fp16, DType::bf16, DType::fp32));
    spec.max_steps = *rc::gen::element(5, 6, 7, 8);  // element, not inRange: inRange scales with the size (8 only at size 100)
    spec.restarts = {{}, {2}, {2, 4}, {1, 2, 3}};
    spec.seeds = 2;
    spec.progress = false;
    return spec;
  });
}

rc::Gen<std::vector<GramStabilityRow>> study_rows(const GramStabilitySpec& spec) {
  return rc::gen::exec([spec] {
    std::vector<GramStabilityRow> rows;
    const int blowup_weight = *rc::gen::element(0, 2, 4, 8);  // some draws have none: a clean grid
    for (std::int64_t side : spec.short_sides)
      for (int aspect : spec.aspects)
        for (const auto& spectrum : spec.spectra)
          for (int seed = 0; seed < spec.seeds; ++seed)
            for (DType d : spec.dtypes)
              for (std::size_t config = 0; config <= spec.restarts.size(); ++config)
                for (int k = 1; k <= spec.max_steps; ++k) {
                  GramStabilityRow r;
                  r.rows = side, r.cols = side * aspect, r.spectrum = spectrum, r.seed = seed, r.dtype = d, r.steps = k;
                  r.kernel = config < spec.restarts.size() ? Kernel::gram : Kernel::standard;
                  if (r.kernel == Kernel::gram) r.restart_at = spec.restarts[config];
                  r.blowup = *rc::gen::weightedElement<bool>({{blowup_weight, true}, {8, false}});
                  r.finite = !r.blowup || *rc::gen::arbitrary<bool>();
                  r.norm = r.finite ? *sixty_fourths(1024) : *rc::gen::element(INFINITY, NAN);  // a non-finite output's norm
                  r.norm_bound = 1 + *sixty_fourths(64);
                  r.orth_error = *sixty_fourths(64);
                  r.orth_error_exact = *sixty_fourths(64);
                  r.polar_distance = *sixty_fourths(64);
                  r.polar_distance_exact = *sixty_fourths(64);
                  rows.push_back(r);
                }
    return rows;
  });
}

std::string config_of(const GramStabilityRow& r) { return r.kernel == Kernel::standard ? "standard" : restarts_text(r.restart_at); }

std::uint64_t flops_of(const GramStabilitySpec& spec, const std::string& config, int steps) {
  NsConfig c;
  c.coeffs = resolve_schedule(spec.coeffs);
  c.steps = steps;
  c.kernel = config == "standard" ? Kernel::standard : Kernel::gram;
  if (config != "standard") c.restart_at = parse_restarts(config);
  return ns_flops(c, 1024, 4096);
}

json median_or_null(const std::vector<double>& v) { return v.empty() ? json(nullptr) : json(upper_median(v)); }

}  // namespace

BOOST_AUTO_TEST_SUITE(study_report_stats)

NSV_PROPERTY(RS7_gram_stability_statistics_are_their_rows_counted, ()) {
  const GramStabilitySpec spec = *small_grids();
  const std::vector<GramStabilityRow> rows = *study_rows(spec);
  const json stress = {{"rows", *rc::gen::element(0, 3)}};
  const json got = gram_stability_stats(spec, rows, stress);
  RC_ASSERT(got.at("stress") == stress);
  RC_ASSERT(got.at("grid") == spec.to_json());
  RC_ASSERT(got.at("cases").get<std::size_t>() == rows.size());
  RC_ASSERT(got.at("cost_shape") == json::array({1024, 4096}));

  const CoeffSchedule coeffs = resolve_schedule(spec.coeffs);
  const double x_star = repelling_fixed_point(coeffs.at_step(spec.max_steps - 1));
  RC_ASSERT(got.at("x_star").get<double>() == x_star);
  RC_ASSERT(got.at("delta").get<double>() == x_star - 1);
  double from_one = 1, at_one = 0, enclosure = 0;
  for (int s = 1; s <= spec.max_steps; ++s) {
    from_one = scalar_step(coeffs.at_step(s - 1), from_one);
    at_one = std::max(at_one, from_one);
    enclosure = std::max(enclosure, schedule_band(coeffs, s, {0, 1}).hi);
  }
  const double top = got.at("band_top").get<double>();
  RC_ASSERT(at_one <= top);
  RC_ASSERT(top <= enclosure);

  // Per configuration and dtype.
  std::vector<std::string> configs;
  for (const auto& r : spec.restarts) configs.push_back(restarts_text(r));
  configs.emplace_back("standard");
  RC_ASSERT(got.at("schedules").size() == configs.size());
  std::map<std::string, std::map<DType, int>> blowups;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const json& s = got.at("schedules").at(i);
    RC_ASSERT(s.at("schedule").get<std::string>() == configs[i]);
    bool clean = true;
    for (DType d : spec.dtypes) {
      int n = 0, cases = 0;
      std::optional<int> first;
      for (const auto& r : rows)
        if (config_of(r) == configs[i] && r.dtype == d) {
          ++cases;
          if (r.blowup) ++n, first = std::min(first.value_or(r.steps), r.steps);
        }
      blowups[configs[i]][d] = n;
      clean = clean && n == 0;
      const json& per = s.at("dtypes").at(std::string(dtype_name(d)));
      RC_ASSERT(per.at("blowups").get<int>() == n && per.at("cases").get<int>() == cases);
      RC_ASSERT(per.at("first_failing_steps") == (first ? json(*first) : json(nullptr)));
    }
    RC_ASSERT(s.at("clean").get<bool>() == clean);
    RC_ASSERT(s.at("flops_5").get<std::uint64_t>() == flops_of(spec, configs[i], 5));
    RC_ASSERT(s.at("flops_max").get<std::uint64_t>() == flops_of(spec, configs[i], spec.max_steps));
  }

  // DeepSpeed's first failure per dtype.
  const auto spectrum_at = [&](const std::string& name) { return std::find(spec.spectra.begin(), spec.spectra.end(), name) - spec.spectra.begin(); };
  for (DType d : spec.dtypes) {
    const GramStabilityRow* first = nullptr;
    for (const auto& r : rows) {
      if (!(r.blowup && r.kernel == Kernel::gram && r.restart_at == kDeepSpeedList && r.dtype == d)) continue;
      const auto key = [&](const GramStabilityRow& x) { return std::make_tuple(x.steps, x.rows * x.cols, x.rows, spectrum_at(x.spectrum), x.seed); };
      if (!first || key(r) < key(*first)) first = &r;
    }
    const json& f = got.at("deepspeed_first_failure").at(std::string(dtype_name(d)));
    RC_ASSERT(f.is_null() == !first);
    if (!first) continue;
    RC_ASSERT(f.at("steps").get<int>() == first->steps && f.at("rows").get<std::int64_t>() == first->rows &&
              f.at("cols").get<std::int64_t>() == first->cols && f.at("spectrum").get<std::string>() == first->spectrum &&
              f.at("seed").get<int>() == first->seed);
    int failing = 0, cases = 0, class_failing = 0, class_cases = 0;
    for (const auto& r : rows)
      if (r.kernel == Kernel::gram && r.restart_at == kDeepSpeedList && r.dtype == d && r.steps == first->steps) {
        ++cases, failing += r.blowup;
        if (r.rows == first->rows && r.cols == first->cols && r.spectrum == first->spectrum) ++class_cases, class_failing += r.blowup;
      }
    RC_ASSERT(f.at("failing_at_these_steps").get<int>() == failing && f.at("cases_at_these_steps").get<int>() == cases);
    RC_ASSERT(f.at("same_input_class_failing").get<int>() == class_failing && f.at("same_input_class_cases").get<int>() == class_cases);
  }

  // The proposals, and their cost against DeepSpeed's list and the standard loop.
  const std::string ds = restarts_text(kDeepSpeedList);
  const auto ratio = [&](const std::string& a, const std::string& b, int steps) {
    return static_cast<double>(flops_of(spec, a, steps)) / static_cast<double>(flops_of(spec, b, steps));
  };
  const auto proposal = [&](const std::vector<DType>& dtypes) -> std::optional<std::string> {
    std::optional<std::string> best;
    for (const auto& list : spec.restarts) {
      const std::string name = restarts_text(list);
      bool clean = true;
      for (DType d : dtypes) clean = clean && blowups[name][d] == 0;
      const auto cost = [&](const std::string& n) { return std::make_pair(flops_of(spec, n, spec.max_steps), flops_of(spec, n, 5)); };
      if (clean && (!best || cost(name) < cost(*best))) best = name;
    }
    return best;
  };
  std::vector<DType> deepspeed_dtypes;
  for (DType d : spec.dtypes)
    if (d != DType::bf16) deepspeed_dtypes.push_back(d);
  for (const auto& [field, dtypes] : {std::pair{"proposed", deepspeed_dtypes}, std::pair{"proposed_all_dtypes", spec.dtypes}}) {
    const std::optional<std::string> best = proposal(dtypes);
    const json& p = got.at(field);
    RC_ASSERT(p.is_null() == !best);
    if (!best) continue;
    RC_ASSERT(p.at("schedule").get<std::string>() == *best);
    RC_ASSERT(p.at("dtypes").size() == dtypes.size());
    RC_ASSERT(p.at("over_deepspeed_5").get<double>() == ratio(*best, ds, 5));
    RC_ASSERT(p.at("over_deepspeed_max").get<double>() == ratio(*best, ds, spec.max_steps));
    RC_ASSERT(p.at("over_standard_5").get<double>() == ratio(*best, "standard", 5));
    RC_ASSERT(p.at("over_standard_max").get<double>() == ratio(*best, "standard", spec.max_steps));
  }
  RC_ASSERT(got.at("deepspeed_over_standard_5").get<double>() == ratio(ds, "standard", 5));

  // The accuracy table.
  const std::optional<std::string> proposed = proposal(deepspeed_dtypes);
  std::size_t line = 0;
  for (const std::string& name : {ds, proposed.value_or(ds), std::string("standard")})
    for (DType d : spec.dtypes)
      for (int steps : {5, spec.max_steps}) {
        std::vector<double> orth, orth_exact, polar, polar_exact;
        for (const auto& r : rows)
          if (config_of(r) == name && r.dtype == d && r.steps == steps && !r.blowup) {
            orth.push_back(r.orth_error), orth_exact.push_back(r.orth_error_exact);
            polar.push_back(r.polar_distance), polar_exact.push_back(r.polar_distance_exact);
          }
        const json& a = got.at("accuracy").at(line++);
        RC_ASSERT(a.at("schedule").get<std::string>() == name && a.at("steps").get<int>() == steps);
        RC_ASSERT(a.at("runs").get<std::size_t>() == orth.size());
        RC_ASSERT(a.at("orth_error") == median_or_null(orth) && a.at("orth_error_exact") == median_or_null(orth_exact));
        RC_ASSERT(a.at("polar_distance") == median_or_null(polar) && a.at("polar_distance_exact") == median_or_null(polar_exact));
      }
  RC_ASSERT(line == got.at("accuracy").size());

  // The example.
  bool example_non_finite = false;
  for (DType d : spec.dtypes) {
    int cases = 0, blown = 0, non_finite = 0;
    double largest = 0;
    for (const auto& r : rows)
      if (r.rows == 2 && r.cols == 16 && r.spectrum == "lowrank:1" && r.steps == 8 && r.kernel == Kernel::gram &&
          r.restart_at == kDeepSpeedList && r.dtype == d) {
        ++cases, blown += r.blowup, non_finite += !r.finite;
        example_non_finite = example_non_finite || !r.finite;
        if (r.finite) largest = std::max(largest, r.norm);
      }
    const json& example = got.at("issue_example");
    const std::string name(dtype_name(d));
    RC_ASSERT(example.contains(name) == (cases > 0));
    if (cases == 0) continue;
    RC_ASSERT(example.at(name).at("cases").get<int>() == cases && example.at(name).at("blowups").get<int>() == blown);
    RC_ASSERT(example.at(name).at("non_finite").get<int>() == non_finite);
    RC_ASSERT(example.at(name).at("largest_finite_norm").get<double>() == largest);
  }
  RC_CLASSIFY(example_non_finite, "the issue's example has a non-finite run");
}

BOOST_AUTO_TEST_SUITE_END()
