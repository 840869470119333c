// The sweep statistics of the report (§1-§4 of README.md).
#include "nsv/engine/report_stats.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "nsv/config_schema.hpp"
#include "nsv/strategy.hpp"

namespace nsv::engine {
namespace {

using nlohmann::json;

// SPEC §4 S6: `shard` must diverge by more than this on Gaussian inputs at tp >= 2.
constexpr double kShardDivergenceMin = 0.1;
// What the report accepts as "fp32 noise" for the exact-in-exact-arithmetic strategies (the
// amplification study, §6, compares them with the kernel's own fp32 error properly).
constexpr double kRoundingNoiseMax = 1e-4;

std::string shape_text(const SweepRow& r) { return std::to_string(r.rows) + "x" + std::to_string(r.cols); }

bool is_long_axis_cut(const SweepRow& r) { return (r.cols > r.rows && r.axis == 1) || (r.rows > r.cols && r.axis == 0); }

bool shard_gram_gaussian(const SweepRow& r) { return r.strategy == Strategy::shard && r.kernel == Kernel::gram && r.spectrum == "gaussian"; }

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// How a strategy's promise fared over the tp >= 2 cases; none run is no verdict at all.
std::string verdict(Promise p, std::size_t bit, std::size_t cases, double max_rel, double gaussian_min) {
  if (cases == 0) return "no_cases";
  switch (p) {
    case Promise::bit_identical: return bit == cases ? "exact" : "violated";
    case Promise::exact_arithmetic: return max_rel < kRoundingNoiseMax ? "rounding_noise" : "check";
    case Promise::none: return gaussian_min > kShardDivergenceMin ? "diverges" : "check";
  }
  return "check";
}

}  // namespace

Stats stats(const std::vector<double>& v) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
  s.sd = v.size() > 1 ? std::sqrt(s.sd / static_cast<double>(v.size() - 1)) : 0.0;
  return s;
}

json range_json(const Stats& s) { return {{"min", s.min}, {"max", s.max}, {"n", s.n}}; }
json mean_sd_json(const Stats& s) { return {{"mean", s.mean}, {"sd", s.sd}, {"n", s.n}}; }

std::vector<double> collect(const std::vector<SweepRow>& rows, const std::function<bool(const SweepRow&)>& keep,
                            const std::function<double(const SweepRow&)>& value) {
  std::vector<double> v;
  for (const auto& r : rows)
    if (keep(r)) v.push_back(value(r));
  return v;
}

json kernel_gap_json(const std::vector<SweepRow>& rows) {
  using Key = std::tuple<std::string, std::string, std::uint64_t, int, int>;  // shape, spectrum, seed, tp, axis
  std::map<Key, double> gram;
  for (const auto& r : rows)
    if (r.strategy == Strategy::shard && r.kernel == Kernel::gram) gram[{shape_text(r), r.spectrum, r.seed, r.tp, r.axis}] = r.rel_diff_mean;
  double gap = 0;
  std::size_t pairs = 0;
  for (const auto& r : rows)
    if (r.strategy == Strategy::shard && r.kernel == Kernel::standard)
      if (const auto it = gram.find({shape_text(r), r.spectrum, r.seed, r.tp, r.axis}); it != gram.end()) {
        gap = std::max(gap, std::abs(it->second - r.rel_diff_mean));
        ++pairs;
      }
  return {{"max", gap}, {"pairs", pairs}};
}

json seed_table_stats(const std::vector<SweepRow>& seed) {
  using Key = std::tuple<std::string, std::string, int, int>;  // shape, kernel, tp, axis
  std::vector<Key> order;
  std::map<Key, std::vector<const SweepRow*>> cells;
  for (const auto& r : seed) {
    const Key k{shape_text(r), std::string(kernel_name(r.kernel)), r.tp, r.axis};
    if (!cells.count(k)) order.push_back(k);
    cells[k].push_back(&r);
  }
  json out = json::array();
  for (const auto& k : order) {
    const auto& rows = cells[k];
    std::vector<double> rd;
    std::vector<std::vector<double>> ranks(static_cast<std::size_t>(std::get<2>(k)));
    for (const SweepRow* r : rows) {
      rd.push_back(r->rel_diff_mean);
      for (std::size_t i = 0; i < ranks.size() && i < r->rel_diff_ranks.size(); ++i) ranks[i].push_back(r->rel_diff_ranks[i].value_or(NAN));
    }
    json rank_json = json::array();
    for (const auto& v : ranks) rank_json.push_back(mean_sd_json(stats(v)));
    out.push_back({{"shape", std::get<0>(k)}, {"kernel", std::get<1>(k)}, {"tp", std::get<2>(k)}, {"axis", std::get<3>(k)},
                   {"rel_diff", mean_sd_json(stats(rd))}, {"ranks", rank_json}});
  }
  return {{"cells", out}, {"kernel_gap", kernel_gap_json(seed)}};
}

json strategy_check_stats(const std::vector<SweepRow>& main, const std::map<std::string, std::size_t>& skipped) {
  json per = json::array();
  for (Strategy s : kAllStrategies) {
    const std::string name(strategy_name(s));
    const auto mine = [&](const SweepRow& r) { return strategy_name(r.strategy) == name; };
    const auto multi = [&](const SweepRow& r) { return mine(r) && r.tp >= 2; };
    const auto max_of = [](const SweepRow& r) { return r.rel_diff_max; };
    const std::vector<double> v = collect(main, multi, max_of);
    const Stats st = stats(v);
    const auto bits = [&](const std::function<bool(const SweepRow&)>& keep) {
      return collect(main, keep, [](const SweepRow& r) { return r.bit_identical ? 1.0 : 0.0; });
    };
    const auto count_bits = [](const std::vector<double>& b) { return static_cast<std::size_t>(std::count(b.begin(), b.end(), 1.0)); };
    const auto bit = bits(multi), all = bits(mine), tp1 = bits([&](const SweepRow& r) { return mine(r) && r.tp == 1; });
    const Stats gaussian = stats(collect(main, [&](const SweepRow& r) { return multi(r) && r.spectrum == "gaussian"; }));
    per.push_back({{"strategy", name},
                   {"cases", v.size()},
                   {"bit_identical", count_bits(bit)},
                   {"max_rel_diff", st.max},
                   {"median_rel_diff", median_of(v)},
                   {"gaussian_rel_diff", range_json(gaussian)},
                   {"verdict", verdict(promise_of(s), count_bits(bit), v.size(), st.max, gaussian.min)},
                   {"all_tp", {{"cases", all.size()}, {"bit_identical", count_bits(all)},
                               {"max_rel_diff", stats(collect(main, mine, max_of)).max}}},
                   {"tp1", {{"cases", tp1.size()}, {"bit_identical", count_bits(tp1)}}}});
  }
  const auto tp1 = collect(main, [](const SweepRow& r) { return r.tp == 1; }, [](const SweepRow& r) { return r.bit_identical ? 1.0 : 0.0; });
  json skip = json::array();
  for (const auto& [reason, n] : skipped) skip.push_back({{"reason", reason}, {"count", n}});
  return {{"cases", main.size()},
          {"skipped", skip},
          {"per_strategy", per},
          {"tp1", {{"cases", tp1.size()}, {"bit_identical", static_cast<std::size_t>(std::count(tp1.begin(), tp1.end(), 1.0))}}},
          {"thresholds", {{"shard_divergence_min", kShardDivergenceMin}, {"rounding_noise_max", kRoundingNoiseMax}}}};
}

namespace {

json vs_tp_stats(const ReportPlan& plan, const std::vector<SweepRow>& main) {
  json rows = json::array();
  for (const auto& shape : plan.main.shapes)
    for (int axis : plan.main.axes) {
      json cells = json::array();
      for (int tp : plan.main.tps) {
        const Stats s = stats(collect(main, [&](const SweepRow& r) {
          return shard_gram_gaussian(r) && shape_text(r) == shape && r.axis == axis && r.tp == tp;
        }));
        cells.push_back({{"tp", tp}, {"rel_diff", s.mean}, {"n", s.n}});
      }
      rows.push_back({{"shape", shape}, {"axis", axis}, {"cells", cells}});
    }
  // Long-axis vs short-axis cuts over the non-square shapes, square ones apart, tp >= 2.
  const auto cut = [&](const std::function<bool(const SweepRow&)>& keep) {
    return range_json(stats(collect(main, [&](const SweepRow& r) { return shard_gram_gaussian(r) && r.tp >= 2 && keep(r); })));
  };
  return {{"tps", plan.main.tps},
          {"rows", rows},
          {"kernel_gap", kernel_gap_json(main)},
          {"short_axis_cut", cut([](const SweepRow& r) { return r.rows != r.cols && !is_long_axis_cut(r); })},
          {"long_axis_cut", cut([](const SweepRow& r) { return r.rows != r.cols && is_long_axis_cut(r); })},
          {"square", cut([](const SweepRow& r) { return r.rows == r.cols; })}};
}

json aspect_stats(const ReportPlan& plan, const std::vector<SweepRow>& aspect) {
  const auto ratio = [](const SweepRow& r) { return r.norm_ratio; };
  json rows = json::array();
  for (const auto& shape : plan.aspect.shapes) {
    const auto [r0, c0] = parse_shape(shape);
    json cells = json::array();
    for (int tp : plan.aspect.tps)
      for (int axis : plan.aspect.axes) {
        const auto keep = [&](const SweepRow& r) { return shape_text(r) == shape && r.tp == tp && r.axis == axis; };
        cells.push_back({{"tp", tp}, {"axis", axis}, {"rel_diff", stats(collect(aspect, keep)).mean},
                         {"norm_ratio", stats(collect(aspect, keep, ratio)).mean}});
      }
    rows.push_back({{"shape", shape}, {"aspect", static_cast<double>(c0) / static_cast<double>(r0)}, {"cells", cells}});
  }
  const auto cut = [&](bool want_long) {
    const auto keep = [&](const SweepRow& r) { return r.rows != r.cols && is_long_axis_cut(r) == want_long; };
    return json{{"rel_diff", range_json(stats(collect(aspect, keep)))}, {"norm_ratio", range_json(stats(collect(aspect, keep, ratio)))}};
  };
  return {{"rows", rows}, {"short_axis_cut", cut(false)}, {"long_axis_cut", cut(true)}};
}

json spectrum_stats(const ReportPlan& plan, const std::vector<SweepRow>& spectrum) {
  const auto cosine = [](const SweepRow& r) { return r.cosine; };
  json rows = json::array();
  for (const auto& sp : plan.spectrum.spectra) {
    json cells = json::array();
    for (int tp : plan.spectrum.tps)
      for (int axis : plan.spectrum.axes) {
        const auto keep = [&](const SweepRow& r) { return r.spectrum == sp && r.tp == tp && r.axis == axis; };
        cells.push_back({{"tp", tp}, {"axis", axis}, {"rel_diff", stats(collect(spectrum, keep)).mean},
                         {"cosine", stats(collect(spectrum, keep, cosine)).mean}});
      }
    rows.push_back({{"spectrum", sp}, {"cells", cells}});
  }
  // The prose contrasts a low-rank spectrum with the Gaussian one at the largest tp, both axes.
  const int tmax = *std::max_element(plan.spectrum.tps.begin(), plan.spectrum.tps.end());
  const auto at = [&](const std::string& sp) {
    const auto keep = [&](const SweepRow& r) { return r.spectrum == sp && r.tp == tmax; };
    return json{{"spectrum", sp}, {"rel_diff", stats(collect(spectrum, keep)).mean}, {"cosine", stats(collect(spectrum, keep, cosine)).mean}};
  };
  return {{"shape", plan.spectrum.shapes.front()},
          {"rows", rows},
          {"contrast", {{"tp", tmax}, {"low_rank", at("lowrank:16")}, {"gaussian", at("gaussian")}}}};
}

}  // namespace

json divergence_stats(const ReportPlan& plan, const std::vector<SweepRow>& main, const std::vector<SweepRow>& aspect,
                      const std::vector<SweepRow>& spectrum) {
  return {{"vs_tp", vs_tp_stats(plan, main)}, {"aspect", aspect_stats(plan, aspect)}, {"spectrum", spectrum_stats(plan, spectrum)}};
}

json communication_stats(const std::vector<SweepRow>& main) {
  // One matrix of the main sweep: 512x1024, gram kernel, Gaussian seed 0, fp32.
  constexpr std::int64_t kRows = 512, kCols = 1024;
  const std::vector<int> tps{2, 4, 8}, axes{0, 1};
  const int detail_axis = 0, detail_tp = 8;  // where FLOPs and memory are shown
  const auto find = [&](const std::string& s, int axis, int tp) -> const SweepRow* {
    const SweepRow* hit = nullptr;
    for (const auto& r : main)
      if (strategy_name(r.strategy) == s && r.rows == kRows && r.cols == kCols && r.axis == axis && r.tp == tp && r.kernel == Kernel::gram &&
          r.spectrum == "gaussian" && r.seed == 0)
        hit = &r;
    return hit;
  };
  json per = json::array();
  std::vector<double> gather_bytes, ratios;
  std::map<int, double> least_ratio_by_axis;
  for (Strategy s : kAllStrategies) {
    const std::string name(strategy_name(s));
    json cells = json::array();
    for (int axis : axes)
      for (int tp : tps) {
        const SweepRow* r = find(name, axis, tp);
        cells.push_back(r ? json{{"axis", axis}, {"tp", tp}, {"bytes_sent", r->bytes_sent}, {"messages", r->messages}}
                          : json{{"axis", axis}, {"tp", tp}, {"applicable", false}});
        const SweepRow* g = find("gather", axis, tp);
        if (name == "gather" && r) gather_bytes.push_back(r->bytes_sent);
        if (r && g && g->bytes_sent > 0 && strategy_record(s).operand == Operand::sharded_frame) {
          const double ratio = static_cast<double>(r->bytes_sent) / static_cast<double>(g->bytes_sent);
          ratios.push_back(ratio);
          auto [it, fresh] = least_ratio_by_axis.try_emplace(axis, ratio);
          if (!fresh) it->second = std::min(it->second, ratio);
        }
      }
    const SweepRow* d = find(name, detail_axis, detail_tp);
    per.push_back({{"strategy", name}, {"cells", cells},
                   {"flops", d ? json(d->flops) : json(nullptr)}, {"extra_memory", d ? json(d->extra_memory) : json(nullptr)}});
  }
  // The split whose Gram is smallest relative to what gather moves, and that Gram's side (the
  // unsharded axis).
  int least_axis = axes.front();
  double least_ratio = INFINITY;
  for (const auto& [axis, ratio] : least_ratio_by_axis)
    if (ratio < least_ratio) least_axis = axis, least_ratio = ratio;
  return {{"rows", kRows}, {"cols", kCols}, {"kernel", "gram"}, {"spectrum", "gaussian"}, {"seed", 0},
          {"whole_bytes", kRows * kCols * 4}, {"tps", tps}, {"axes", axes},
          {"detail", {{"axis", detail_axis}, {"tp", detail_tp}}},
          {"per_strategy", per},
          {"gather_bytes", range_json(stats(gather_bytes))},
          {"allreduce_over_gather_bytes", range_json(stats(ratios))},
          {"least_ratio_split", {{"axis", least_axis}, {"gram_side", least_axis == 0 ? kCols : kRows}}}};
}

}  // namespace nsv::engine
