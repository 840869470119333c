// The statistics `nsv report` prints in §1-§4 and §6 of README.md (engine/src/report_stats.cpp,
// report_step_stats.cpp: report.json's "seed_tables", "strategy_checks", "divergence",
// "communication", "amplification"), against their definitions evaluated here the slow way:
// every figure of a cell recomputed by scanning all rows with the cell's predicate written out
// from the section's documentation, no grouping map, no shared helper. A committed report only
// shows that the figures did not change; these show that each is the figure its words name.
//
// Inputs: rows of random cases (each case key at most once, as in a sweep) whose results are
// multiples of 1/64 below 4: every sum of up to a few hundred of them is exact in fp64, so a
// mean computed in any order is the same double, and means, counts, minima, maxima and medians
// are compared with ==. The one rounded figure is a sample standard deviation: the engine's
// two-pass sum and the long-double one here both lie within (n + 4) u of the true value
// (Higham, Accuracy and Stability, §1.9; n <= 64 terms, u = 2^-53), allowed as 1e-13 relative.
//
// RS1  stats(): mean, min, max, n exact, sd within the bound above.
// RS2  strategy_checks: per strategy, its tp >= 2 cases, bit-identical count, largest and
//      median (the element at rank n/2 of the sorted values) largest-rank rel. diff, the
//      Gaussian range, the all-tp and tp = 1 counts, and the verdict from SPEC §3-§4's rule
//      (bit_identical: every case bit-identical; exact in exact arithmetic: largest rel. diff
//      below 1e-4; none: Gaussian minimum above S6's 0.1); no case at tp >= 2 is "no_cases",
//      never a verdict about cases that did not run.
// RS3  seed_tables: one cell per (shape, kernel, tp, axis) in first-seen order, its mean and
//      sd over seeds and per rank; the kernel gap over the shard cases run with both kernels.
// RS4  divergence: every cell of the TP, aspect and spectrum tables and the cut ranges, the
//      spectrum contrast at the largest tp of the plan.
// RS5  communication: each strategy's bytes and messages at each split of the one matrix the
//      section names, FLOPs and memory at its detail split, the ranges, the all-reduce / gather
//      ratios and the split with the least.
// RS6  amplification: the per-(spectrum, steps) means, a^k, the largest whole-matrix
//      amplification at the last step per spectrum, the worst ratio to the kernel's own error.
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "check.hpp"
#include "studies/exact_values.hpp"
#include "generators/tiers.hpp"
#include "nsv/coeffs.hpp"
#include "nsv/config_schema.hpp"
#include "nsv/engine/report_plan.hpp"
#include "nsv/engine/report_stats.hpp"

using namespace nsv;
using namespace nsv::engine;
using nlohmann::json;
using nsv::checks::sixty_fourths;
using nsv::checks::upper_median;
using nsv::checks::assert_range;
using nsv::checks::exact_mean;
using nsv::checks::item_where;

namespace {

// The SPEC's thresholds, written from SPEC §4 (S6) and §3 (what the report calls fp32 noise).
constexpr double kShardDivergenceMin = 0.1;
constexpr double kRoundingNoiseMax = 1e-4;
// Two-pass sample standard deviation, engine and long double here: (n + 4) u relative each.
constexpr double kSdAgreement = 1e-13;

// A case's key drawn from small sets, so that cells hold several rows and the decoys (other
// shapes, kernels, seeds, spectra) lie beside them.
struct Key {
  std::int64_t rows, cols;
  std::string spectrum;
  std::uint64_t seed;
  Kernel kernel;
  int tp, axis;
  Strategy strategy;
  auto tied() const { return std::tie(rows, cols, spectrum, seed, kernel, tp, axis, strategy); }
  bool operator<(const Key& o) const { return tied() < o.tied(); }
};

rc::Gen<SweepRow> sweep_rows(const std::vector<std::pair<std::int64_t, std::int64_t>>& shapes, const std::vector<int>& tps) {
  return rc::gen::exec([shapes, tps] {
    SweepRow r;
    std::tie(r.rows, r.cols) = *rc::gen::elementOf(shapes);
    r.spectrum = *rc::gen::element<std::string>("gaussian", "lowrank:16", "powerlaw:1");
    r.seed = *rc::gen::element<std::uint64_t>(0, 1, 2);  // element: inRange scales its range with the size
    r.kernel = *rc::gen::element(Kernel::gram, Kernel::standard);
    r.tp = *rc::gen::elementOf(tps);
    r.axis = *rc::gen::element(0, 1);
    r.strategy = *rc::gen::elementOf(std::vector<Strategy>(std::begin(kAllStrategies), std::end(kAllStrategies)));
    r.rel_diff_mean = *sixty_fourths(128);
    r.rel_diff_max = r.rel_diff_mean + *sixty_fourths(64);
    for (int i = 0; i < r.tp; ++i) r.rel_diff_ranks.emplace_back(*sixty_fourths(128));
    r.cosine = *sixty_fourths(64);
    r.norm_ratio = *sixty_fourths(128);
    r.bit_identical = *rc::gen::arbitrary<bool>();
    r.bytes_sent = *rc::gen::inRange<std::uint64_t>(0, 1u << 22);
    r.messages = *rc::gen::inRange<std::uint64_t>(0, 64);
    r.flops = *rc::gen::inRange<std::uint64_t>(0, 1u << 30);
    r.extra_memory = *rc::gen::inRange<std::uint64_t>(0, 1u << 22);
    return r;
  });
}

// Rows with distinct case keys, the first drawn of each key kept: a sweep runs each case once.
std::vector<SweepRow> distinct_cases(std::vector<SweepRow> rows) {
  std::set<Key> seen;
  std::vector<SweepRow> out;
  for (auto& r : rows)
    if (seen.insert(Key{r.rows, r.cols, r.spectrum, r.seed, r.kernel, r.tp, r.axis, r.strategy}).second) out.push_back(std::move(r));
  return out;
}

rc::Gen<std::vector<SweepRow>> sweeps(const std::vector<std::pair<std::int64_t, std::int64_t>>& shapes, const std::vector<int>& tps,
                                      int most_rows) {
  return rc::gen::map(rc::gen::container<std::vector<SweepRow>>(sweep_rows(shapes, tps)), [most_rows](std::vector<SweepRow> v) {
    if (v.size() > static_cast<std::size_t>(most_rows)) v.resize(static_cast<std::size_t>(most_rows));
    return distinct_cases(std::move(v));
  });
}

const std::vector<std::pair<std::int64_t, std::int64_t>> kSweepShapes{{256, 256}, {512, 1024}, {1024, 256}};

std::string shape_of(const SweepRow& r) { return std::to_string(r.rows) + "x" + std::to_string(r.cols); }

// The mean of the values the predicate keeps, and how many; 0 for none (the engine's convention).
std::pair<double, std::size_t> mean_where(const std::vector<SweepRow>& rows, const std::function<bool(const SweepRow&)>& keep,
                                          double SweepRow::*member) {
  std::vector<double> v;
  for (const auto& r : rows)
    if (keep(r)) v.push_back(r.*member);
  return {exact_mean(v), v.size()};
}

double textbook_sd(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  long double mean = 0, ss = 0;
  for (double x : v) mean += x;
  mean /= static_cast<long double>(v.size());
  for (double x : v) ss += (x - mean) * (x - mean);
  return static_cast<double>(std::sqrt(ss / static_cast<long double>(v.size() - 1)));
}

void assert_mean_sd(const json& got, const std::vector<double>& v) {
  RC_ASSERT(got.at("n").get<std::size_t>() == v.size());
  RC_ASSERT(got.at("mean").get<double>() == exact_mean(v));
  const double sd = textbook_sd(v);
  RC_ASSERT_WITHIN(std::abs(got.at("sd").get<double>() - sd), kSdAgreement * sd, "two-pass sd, (n + 4) u each side (kSdAgreement)");
}

std::string expected_verdict(Promise p, std::size_t cases, std::size_t bit, double max_rel, const std::vector<double>& gaussian) {
  if (cases == 0) return "no_cases";
  switch (p) {
    case Promise::bit_identical: return bit == cases ? "exact" : "violated";
    case Promise::exact_arithmetic: return max_rel < kRoundingNoiseMax ? "rounding_noise" : "check";
    case Promise::none:
      return !gaussian.empty() && *std::min_element(gaussian.begin(), gaussian.end()) > kShardDivergenceMin ? "diverges" : "check";
  }
  return "?";
}

// The amplification study's rows: spectra x seeds x axes x steps, each figure a multiple of 1/64.
rc::Gen<std::vector<AmplificationRow>> amplification_rows(const AmplificationSpec& spec) {
  return rc::gen::exec([spec] {
    std::vector<AmplificationRow> rows;
    for (const auto& sp : spec.spectra)
      for (int seed = 0; seed < spec.seeds; ++seed)
        for (int axis : spec.axes)
          for (int k = 1; k <= spec.max_steps; ++k) {
            if (!*rc::gen::weightedElement<bool>({{4, true}, {1, false}})) continue;  // a case the run did not reach
            AmplificationRow r;
            r.spectrum = sp;
            r.seed = seed;
            r.axis = axis;
            r.steps = k;
            for (double* f : {&r.grad_rel, &r.whole_amp, &r.ar_order_amp, &r.ar_vs_whole, &r.rs_order_amp, &r.rs_vs_whole})
              *f = *sixty_fourths(255);
            r.kernel_err_standard = *sixty_fourths(254) + 1 / 64.0;  // an fp32 kernel's error against fp64: never 0 here
            r.kernel_err_gram = *sixty_fourths(254) + 1 / 64.0;
            rows.push_back(r);
          }
    return rows;
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(study_report_stats)

NSV_PROPERTY(RS1_stats_are_the_mean_sd_and_range_of_their_values, ()) {
  const auto v = *rc::gen::container<std::vector<double>>(sixty_fourths(255));
  const Stats s = stats(v);
  assert_range(range_json(s), v);
  assert_mean_sd(mean_sd_json(s), v);
}

NSV_PROPERTY(RS2_each_strategys_check_is_counted_over_its_own_cases, ()) {
  const std::vector<SweepRow> main = *sweeps(kSweepShapes, {1, 2, 4}, 120);
  const std::map<std::string, std::size_t> skipped{{"per_head on a dim-1 split", *rc::gen::inRange<std::size_t>(0, 50)}};
  const json got = strategy_check_stats(main, skipped);
  RC_ASSERT(got.at("cases").get<std::size_t>() == main.size());
  RC_ASSERT(got.at("skipped") == json::array({{{"reason", "per_head on a dim-1 split"}, {"count", skipped.begin()->second}}}));
  RC_ASSERT(got.at("thresholds").at("shard_divergence_min").get<double>() == kShardDivergenceMin);
  RC_ASSERT(got.at("thresholds").at("rounding_noise_max").get<double>() == kRoundingNoiseMax);
  std::size_t tp1_cases = 0, tp1_bits = 0;
  for (const auto& r : main)
    if (r.tp == 1) {
      ++tp1_cases;
      tp1_bits += r.bit_identical;
    }
  RC_ASSERT(got.at("tp1").at("cases").get<std::size_t>() == tp1_cases);
  RC_ASSERT(got.at("tp1").at("bit_identical").get<std::size_t>() == tp1_bits);
  RC_ASSERT(got.at("per_strategy").size() == std::size(kAllStrategies));
  for (Strategy s : kAllStrategies) {
    const json& c = item_where(got.at("per_strategy"), "strategy", std::string(strategy_name(s)));
    std::vector<double> largest, gaussian, all_largest;
    std::size_t bits = 0, all_cases = 0, all_bits = 0, own_tp1 = 0, own_tp1_bits = 0;
    for (const auto& r : main) {
      if (r.strategy != s) continue;
      ++all_cases;
      all_bits += r.bit_identical;
      all_largest.push_back(r.rel_diff_max);
      if (r.tp == 1) {
        ++own_tp1;
        own_tp1_bits += r.bit_identical;
        continue;
      }
      largest.push_back(r.rel_diff_max);
      bits += r.bit_identical;
      if (r.spectrum == "gaussian") gaussian.push_back(r.rel_diff_mean);
    }
    const double max_rel = largest.empty() ? 0.0 : *std::max_element(largest.begin(), largest.end());
    RC_LOG() << strategy_name(s) << ": " << c.dump() << "\n";
    RC_ASSERT(c.at("cases").get<std::size_t>() == largest.size());
    RC_ASSERT(c.at("bit_identical").get<std::size_t>() == bits);
    RC_ASSERT(c.at("max_rel_diff").get<double>() == max_rel);
    RC_ASSERT(c.at("median_rel_diff").get<double>() == upper_median(largest));
    assert_range(c.at("gaussian_rel_diff"), gaussian);
    RC_ASSERT(c.at("verdict").get<std::string>() == expected_verdict(promise_of(s), largest.size(), bits, max_rel, gaussian));
    RC_ASSERT(c.at("all_tp").at("cases").get<std::size_t>() == all_cases);
    RC_ASSERT(c.at("all_tp").at("bit_identical").get<std::size_t>() == all_bits);
    RC_ASSERT(c.at("all_tp").at("max_rel_diff").get<double>() ==
              (all_largest.empty() ? 0.0 : *std::max_element(all_largest.begin(), all_largest.end())));
    RC_ASSERT(c.at("tp1").at("cases").get<std::size_t>() == own_tp1);
    RC_ASSERT(c.at("tp1").at("bit_identical").get<std::size_t>() == own_tp1_bits);
  }
}

// The verdicts' premises, each reached: a strategy with no case at tp >= 2 has no verdict about
// its promise, whatever its tp = 1 rows say.
BOOST_AUTO_TEST_CASE(RS2_no_case_at_tp_2_or_more_is_no_verdict) {
  SweepRow r;
  r.rows = 256, r.cols = 256, r.spectrum = "gaussian", r.tp = 1, r.bit_identical = true;
  std::vector<SweepRow> rows;
  for (Strategy s : kAllStrategies) {
    r.strategy = s;
    rows.push_back(r);
  }
  const json got = strategy_check_stats(rows, {});
  for (const json& c : got.at("per_strategy")) BOOST_CHECK_EQUAL(c.at("verdict").get<std::string>(), "no_cases");
}

NSV_PROPERTY(RS3_each_seed_table_cell_is_its_rows_mean_and_sd, ()) {
  std::vector<SweepRow> seed = *sweeps(kSweepShapes, {2, 4}, 80);
  for (auto& r : seed) r.strategy = Strategy::shard;  // the seed sweep runs shard only
  seed = distinct_cases(std::move(seed));
  const json got = seed_table_stats(seed);
  // The cells, in the order their first row appears.
  std::vector<std::tuple<std::string, std::string, int, int>> order;
  for (const auto& r : seed) {
    const auto k = std::make_tuple(shape_of(r), std::string(kernel_name(r.kernel)), r.tp, r.axis);
    if (std::find(order.begin(), order.end(), k) == order.end()) order.push_back(k);
  }
  const json& cells = got.at("cells");
  RC_ASSERT(cells.size() == order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto& [shape, kernel, tp, axis] = order[i];
    const json& c = cells[i];
    RC_ASSERT(c.at("shape").get<std::string>() == shape && c.at("kernel").get<std::string>() == kernel);
    RC_ASSERT(c.at("tp").get<int>() == tp && c.at("axis").get<int>() == axis);
    std::vector<double> rd;
    std::vector<std::vector<double>> ranks(static_cast<std::size_t>(tp));
    for (const auto& r : seed)
      if (shape_of(r) == shape && kernel_name(r.kernel) == kernel && r.tp == tp && r.axis == axis) {
        rd.push_back(r.rel_diff_mean);
        for (int q = 0; q < tp; ++q) ranks[static_cast<std::size_t>(q)].push_back(*r.rel_diff_ranks[static_cast<std::size_t>(q)]);
      }
    assert_mean_sd(c.at("rel_diff"), rd);
    RC_ASSERT(c.at("ranks").size() == ranks.size());
    for (std::size_t q = 0; q < ranks.size(); ++q) assert_mean_sd(c.at("ranks")[q], ranks[q]);
  }
  // The kernel gap: over the shard cases run with both kernels (same shape, spectrum, seed, tp, axis).
  double gap = 0;
  std::size_t pairs = 0;
  for (const auto& s : seed)
    for (const auto& g : seed)
      if (s.kernel == Kernel::standard && g.kernel == Kernel::gram && s.rows == g.rows && s.cols == g.cols &&
          s.spectrum == g.spectrum && s.seed == g.seed && s.tp == g.tp && s.axis == g.axis) {
        gap = std::max(gap, std::abs(s.rel_diff_mean - g.rel_diff_mean));
        ++pairs;
      }
  RC_ASSERT(got.at("kernel_gap").at("pairs").get<std::size_t>() == pairs);
  RC_ASSERT(got.at("kernel_gap").at("max").get<double>() == gap);
}

NSV_PROPERTY(RS4_each_divergence_cell_is_the_mean_of_its_cases, ()) {
  ReportPlan plan = make_report_plan(true);
  const std::vector<std::string> shapes{"256x256", "512x1024", "1024x256"};
  const auto subset = [](auto all) {
    auto kept = *rc::gen::map(rc::gen::container<std::vector<bool>>(all.size(), rc::gen::arbitrary<bool>()), [all](std::vector<bool> keep) {
      decltype(all) out;
      for (std::size_t i = 0; i < all.size(); ++i)
        if (keep[i]) out.push_back(all[i]);
      return out.empty() ? decltype(all){all.front()} : out;
    });
    return kept;
  };
  for (SweepSpec* s : {&plan.main, &plan.aspect, &plan.spectrum}) {
    s->shapes = subset(shapes);
    s->axes = subset(std::vector<int>{0, 1});
    s->tps = subset(std::vector<int>{1, 2, 4});
    if (*rc::gen::arbitrary<bool>()) std::reverse(s->tps.begin(), s->tps.end());  // the plan's order is not assumed sorted
  }
  plan.spectrum.spectra = {"gaussian", "lowrank:16", "powerlaw:1"};
  const std::vector<SweepRow> main = *sweeps(kSweepShapes, {1, 2, 4}, 150);
  const std::vector<SweepRow> aspect = *sweeps(kSweepShapes, {1, 2, 4}, 80);
  const std::vector<SweepRow> spectrum = *sweeps(kSweepShapes, {1, 2, 4}, 80);
  const json got = divergence_stats(plan, main, aspect, spectrum);
  RC_LOG() << got.dump() << "\n";

  // vs tp: shard, gram kernel, Gaussian cases of the main sweep.
  const auto shard_gram_gaussian = [](const SweepRow& r) {
    return r.strategy == Strategy::shard && r.kernel == Kernel::gram && r.spectrum == "gaussian";
  };
  const json& vs = got.at("vs_tp");
  RC_ASSERT(vs.at("tps").get<std::vector<int>>() == plan.main.tps);
  std::size_t row = 0;
  for (const auto& shape : plan.main.shapes)
    for (int axis : plan.main.axes) {
      const json& line = vs.at("rows").at(row++);
      RC_ASSERT(line.at("shape").get<std::string>() == shape && line.at("axis").get<int>() == axis);
      for (std::size_t t = 0; t < plan.main.tps.size(); ++t) {
        const int tp = plan.main.tps[t];
        const auto [mean, n] = mean_where(main, [&](const SweepRow& r) {
          return shard_gram_gaussian(r) && shape_of(r) == shape && r.axis == axis && r.tp == tp;
        }, &SweepRow::rel_diff_mean);
        const json& cell = line.at("cells").at(t);
        RC_ASSERT(cell.at("tp").get<int>() == tp && cell.at("rel_diff").get<double>() == mean && cell.at("n").get<std::size_t>() == n);
      }
    }
  RC_ASSERT(row == vs.at("rows").size());
  // The cut ranges: the long side cut is dim 1 of a wide matrix or dim 0 of a tall one.
  const auto long_cut = [](const SweepRow& r) { return r.cols > r.rows ? r.axis == 1 : r.axis == 0; };
  const auto values = [](const std::vector<SweepRow>& rows, const std::function<bool(const SweepRow&)>& keep, double SweepRow::*m) {
    std::vector<double> v;
    for (const auto& r : rows)
      if (keep(r)) v.push_back(r.*m);
    return v;
  };
  const auto multi_shard = [&](const SweepRow& r) { return shard_gram_gaussian(r) && r.tp >= 2; };
  assert_range(vs.at("square"), values(main, [&](const SweepRow& r) { return multi_shard(r) && r.rows == r.cols; }, &SweepRow::rel_diff_mean));
  assert_range(vs.at("long_axis_cut"),
               values(main, [&](const SweepRow& r) { return multi_shard(r) && r.rows != r.cols && long_cut(r); }, &SweepRow::rel_diff_mean));
  assert_range(vs.at("short_axis_cut"),
               values(main, [&](const SweepRow& r) { return multi_shard(r) && r.rows != r.cols && !long_cut(r); }, &SweepRow::rel_diff_mean));

  // vs aspect ratio: every row of the aspect sweep, per shape, tp and axis.
  const json& as = got.at("aspect");
  for (std::size_t i = 0; i < plan.aspect.shapes.size(); ++i) {
    const std::string& shape = plan.aspect.shapes[i];
    const json& line = as.at("rows").at(i);
    const auto [r0, c0] = parse_shape(shape);
    RC_ASSERT(line.at("shape").get<std::string>() == shape && line.at("aspect").get<double>() == double(c0) / double(r0));
    std::size_t cell = 0;
    for (int tp : plan.aspect.tps)
      for (int axis : plan.aspect.axes) {
        const auto keep = [&](const SweepRow& r) { return shape_of(r) == shape && r.tp == tp && r.axis == axis; };
        const json& c = line.at("cells").at(cell++);
        RC_ASSERT(c.at("tp").get<int>() == tp && c.at("axis").get<int>() == axis);
        RC_ASSERT(c.at("rel_diff").get<double>() == mean_where(aspect, keep, &SweepRow::rel_diff_mean).first);
        RC_ASSERT(c.at("norm_ratio").get<double>() == mean_where(aspect, keep, &SweepRow::norm_ratio).first);
      }
  }
  for (const bool want_long : {false, true}) {
    const auto keep = [&](const SweepRow& r) { return r.rows != r.cols && long_cut(r) == want_long; };
    const json& cut = as.at(want_long ? "long_axis_cut" : "short_axis_cut");
    assert_range(cut.at("rel_diff"), values(aspect, keep, &SweepRow::rel_diff_mean));
    assert_range(cut.at("norm_ratio"), values(aspect, keep, &SweepRow::norm_ratio));
  }

  // vs spectrum, and the contrast at the plan's largest tp.
  const json& sp = got.at("spectrum");
  RC_ASSERT(sp.at("shape").get<std::string>() == plan.spectrum.shapes.front());
  for (std::size_t i = 0; i < plan.spectrum.spectra.size(); ++i) {
    const std::string& name = plan.spectrum.spectra[i];
    const json& line = sp.at("rows").at(i);
    RC_ASSERT(line.at("spectrum").get<std::string>() == name);
    std::size_t cell = 0;
    for (int tp : plan.spectrum.tps)
      for (int axis : plan.spectrum.axes) {
        const auto keep = [&](const SweepRow& r) { return r.spectrum == name && r.tp == tp && r.axis == axis; };
        const json& c = line.at("cells").at(cell++);
        RC_ASSERT(c.at("rel_diff").get<double>() == mean_where(spectrum, keep, &SweepRow::rel_diff_mean).first);
        RC_ASSERT(c.at("cosine").get<double>() == mean_where(spectrum, keep, &SweepRow::cosine).first);
      }
  }
  const int largest = *std::max_element(plan.spectrum.tps.begin(), plan.spectrum.tps.end());
  RC_ASSERT(sp.at("contrast").at("tp").get<int>() == largest);
  for (const auto& [field, name] : {std::pair{"low_rank", "lowrank:16"}, std::pair{"gaussian", "gaussian"}}) {
    const auto keep = [&](const SweepRow& r) { return r.spectrum == name && r.tp == largest; };
    const json& c = sp.at("contrast").at(field);
    RC_ASSERT(c.at("rel_diff").get<double>() == mean_where(spectrum, keep, &SweepRow::rel_diff_mean).first);
    RC_ASSERT(c.at("cosine").get<double>() == mean_where(spectrum, keep, &SweepRow::cosine).first);
  }
}

NSV_PROPERTY(RS5_communication_reads_its_one_matrix_and_compares_with_gather, ()) {
  // The matrix the section names (communication_stats: 512x1024, gram, Gaussian, seed 0), and
  // decoys beside it that differ in one parameter.
  std::vector<SweepRow> main = *sweeps({{512, 1024}, {1024, 256}}, {2, 4, 8}, 150);
  for (auto& r : main)
    if (*rc::gen::weightedElement<bool>({{3, true}, {1, false}})) r.kernel = Kernel::gram, r.spectrum = "gaussian", r.seed = 0;
  main = distinct_cases(std::move(main));
  const json got = communication_stats(main);
  const auto named = [](const SweepRow& r) { return r.rows == 512 && r.cols == 1024 && r.kernel == Kernel::gram && r.spectrum == "gaussian" && r.seed == 0; };
  const auto find = [&](Strategy s, int axis, int tp) -> const SweepRow* {
    for (const auto& r : main)
      if (named(r) && r.strategy == s && r.axis == axis && r.tp == tp) return &r;
    return nullptr;
  };
  RC_ASSERT(got.at("whole_bytes").get<std::int64_t>() == 512 * 1024 * 4);
  const std::vector<int> tps = got.at("tps").get<std::vector<int>>(), axes = got.at("axes").get<std::vector<int>>();
  RC_ASSERT(tps == (std::vector<int>{2, 4, 8}) && axes == (std::vector<int>{0, 1}));
  std::vector<double> gather_bytes, ratios;
  std::map<int, double> least;
  for (Strategy s : kAllStrategies) {
    const json& per = item_where(got.at("per_strategy"), "strategy", std::string(strategy_name(s)));
    std::size_t cell = 0;
    for (int axis : axes)
      for (int tp : tps) {
        const json& c = per.at("cells").at(cell++);
        const SweepRow* r = find(s, axis, tp);
        RC_ASSERT(c.at("axis").get<int>() == axis && c.at("tp").get<int>() == tp);
        if (!r) {
          RC_ASSERT(c.at("applicable") == false);
          continue;
        }
        RC_ASSERT(c.at("bytes_sent").get<std::uint64_t>() == r->bytes_sent && c.at("messages").get<std::uint64_t>() == r->messages);
        if (s == Strategy::gather) gather_bytes.push_back(static_cast<double>(r->bytes_sent));
        // The all-reduce strategies (Gram matrices summed over the shards) against gather's bytes.
        const SweepRow* g = find(Strategy::gather, axis, tp);
        if ((s == Strategy::gram_allreduce || s == Strategy::gram_restart_allreduce) && g && g->bytes_sent > 0) {
          const double ratio = static_cast<double>(r->bytes_sent) / static_cast<double>(g->bytes_sent);
          ratios.push_back(ratio);
          least[axis] = least.count(axis) ? std::min(least[axis], ratio) : ratio;
        }
      }
    const SweepRow* d = find(s, got.at("detail").at("axis").get<int>(), got.at("detail").at("tp").get<int>());
    RC_ASSERT(per.at("flops") == (d ? json(d->flops) : json(nullptr)));
    RC_ASSERT(per.at("extra_memory") == (d ? json(d->extra_memory) : json(nullptr)));
  }
  assert_range(got.at("gather_bytes"), gather_bytes);
  assert_range(got.at("allreduce_over_gather_bytes"), ratios);
  // The split with the least ratio (the first axis on a tie or with none), and its Gram's side:
  // the unsharded one.
  int axis = 0;
  if (least.count(1) && (!least.count(0) || least[1] < least[0])) axis = 1;
  RC_ASSERT(got.at("least_ratio_split").at("axis").get<int>() == axis);
  RC_ASSERT(got.at("least_ratio_split").at("gram_side").get<int>() == (axis == 0 ? 1024 : 512));
}

NSV_PROPERTY(RS6_amplification_rows_are_the_means_over_seeds_and_axes, ()) {
  AmplificationSpec spec;
  spec.seeds = *rc::gen::element(1, 2, 3);
  spec.max_steps = *rc::gen::element(1, 3, 5);
  const std::vector<AmplificationRow> rows = *amplification_rows(spec);
  const json got = amplification_stats(spec, rows);
  const double a = builtin_schedule("keller").triples.front().a;
  RC_ASSERT(got.at("a").get<double>() == a);
  std::size_t line = 0;
  for (const auto& sp : spec.spectra)
    for (int k = 1; k <= spec.max_steps; ++k) {
      const json& r = got.at("rows").at(line++);
      std::vector<const AmplificationRow*> sel;
      for (const auto& x : rows)
        if (x.spectrum == sp && x.steps == k) sel.push_back(&x);
      const auto mean = [&](double AmplificationRow::*m) {
        std::vector<double> v;
        for (const auto* x : sel) v.push_back(x->*m);
        return exact_mean(v);
      };
      RC_ASSERT(r.at("spectrum").get<std::string>() == sp && r.at("steps").get<int>() == k);
      RC_ASSERT(r.at("n").get<std::size_t>() == sel.size());
      RC_ASSERT(r.at("a_pow_k").get<double>() == std::pow(a, k));
      RC_ASSERT(r.at("grad_rel_diff").get<double>() == mean(&AmplificationRow::grad_rel));
      RC_ASSERT(r.at("whole").get<double>() == mean(&AmplificationRow::whole_amp));
      RC_ASSERT(r.at("gram_allreduce_order").get<double>() == mean(&AmplificationRow::ar_order_amp));
      RC_ASSERT(r.at("gram_allreduce_vs_whole").get<double>() == mean(&AmplificationRow::ar_vs_whole));
      RC_ASSERT(r.at("gram_restart_order").get<double>() == mean(&AmplificationRow::rs_order_amp));
      RC_ASSERT(r.at("gram_restart_vs_whole").get<double>() == mean(&AmplificationRow::rs_vs_whole));
      RC_ASSERT(r.at("kernel_err_standard").get<double>() == mean(&AmplificationRow::kernel_err_standard));
      RC_ASSERT(r.at("kernel_err_gram").get<double>() == mean(&AmplificationRow::kernel_err_gram));
    }
  RC_ASSERT(line == got.at("rows").size());
  // The worst distance from whole-matrix NS in units of the kernel's own error: gram_allreduce
  // runs the standard loop, gram_restart_allreduce the Gram loop (strategy.hpp's iterations).
  double worst = 0;
  for (const auto& x : rows) worst = std::max({worst, x.ar_vs_whole / x.kernel_err_standard, x.rs_vs_whole / x.kernel_err_gram});
  RC_ASSERT(got.at("worst_ratio_to_kernel_error").get<double>() == worst);
  for (const auto& sp : spec.spectra) {
    std::optional<double> peak;
    for (const auto& x : rows)
      if (x.spectrum == sp && x.steps == spec.max_steps) peak = std::max(peak.value_or(x.whole_amp), x.whole_amp);
    std::optional<double> listed;
    for (const json& p : got.at("whole_at_max_steps"))
      if (p.at("spectrum").get<std::string>() == sp) listed = p.at("whole").get<double>();
    RC_ASSERT(listed == peak);
  }
}

// Negative control: RS2 tells a statistic over the wrong selection from the right one. Counting
// tp = 1 rows among a strategy's cases changes the count in most draws.
BOOST_AUTO_TEST_CASE(RS_negative_control_a_wrong_selection_is_seen) {
  int seen = 0, drawn = 0;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const std::vector<SweepRow> main = nsv::checks::sample(sweeps(kSweepShapes, {1, 2, 4}, 120), seed);
    const json got = strategy_check_stats(main, {});
    std::size_t with_tp1 = 0;
    for (const auto& r : main) with_tp1 += r.strategy == Strategy::shard;
    ++drawn;
    seen += item_where(got.at("per_strategy"), "strategy", "shard").at("cases").get<std::size_t>() != with_tp1;
  }
  BOOST_TEST_MESSAGE("a count with tp = 1 rows differed in " << seen << " of " << drawn << " draws");
  BOOST_CHECK(seen * 2 > drawn);
}

BOOST_AUTO_TEST_SUITE_END()
