#include "nsv/engine/report_schedules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>

#include "nsv/engine/csv.hpp"
#include "nsv/coeffs.hpp"
#include "nsv/npy.hpp"

namespace nsv::engine {
namespace {

using nlohmann::json;

// Megatron's distributed-NS tests check one step only, saying the reduction-order error grows to
// ~1e-2 by step 5 for quintic (SPEC §4 S5, lines 195-196): the figure compared with.
constexpr double kMegatronClaim = 1e-2;
constexpr int kMegatronClaimSteps = 5;

std::string num(double v) { return fmt::format("{:.6g}", v); }
std::string out_path(const SectionOptions& o, const std::string& file) { return (std::filesystem::path(o.out_dir) / file).string(); }

// The mean of value(x) over the xs that keep(x) accepts (0 when none does).
template <class T>
double mean_of(const std::vector<T>& xs, const std::function<bool(const T&)>& keep, const std::function<double(const T&)>& value) {
  double sum = 0;
  std::size_t n = 0;
  for (const T& x : xs)
    if (keep(x)) sum += value(x), ++n;
  return n ? sum / static_cast<double>(n) : 0.0;
}
template <class T>
double max_of(const std::vector<T>& xs, const std::function<bool(const T&)>& keep, const std::function<double(const T&)>& value) {
  double m = 0;
  for (const T& x : xs)
    if (keep(x)) m = std::max(m, value(x));
  return m;
}

void write_files(const std::vector<ScheduleAmplificationRow>& amp, const ScheduleStudySpec& spec,
                 const std::vector<DistributedRow>& dist, const std::vector<BandRow>& bands, const SectionOptions& o) {
  std::vector<std::string> header = amplification_header();
  header.insert(header.begin(), "schedule");
  std::string text = csv_line(header);
  for (const auto& r : amp) {
    std::vector<std::string> f = amplification_fields(spec.amplification, r.row);
    f.insert(f.begin(), r.schedule);
    text += csv_line(f);
  }
  write_file_atomically(out_path(o, "schedule_amplification.csv"), text);

  text = csv_line({"schedule", "rows", "cols", "tp", "ns_steps", "axis", "seed", "rel_diff", "max_abs_diff", "order_rel_diff", "kernel_err"});
  for (const auto& r : dist)
    text += csv_line({r.schedule, std::to_string(spec.megatron_rows), std::to_string(spec.megatron_cols), std::to_string(spec.megatron_tp),
                      std::to_string(r.steps), std::to_string(r.axis), std::to_string(r.seed), num(r.rel_diff), num(r.max_abs_diff),
                      num(r.order_rel_diff), num(r.kernel_err)});
  write_file_atomically(out_path(o, "schedule_distributed.csv"), text);

  text = csv_line({"schedule", "ns_steps", "x_min", "band_lo", "band_hi", "repelling_fixed_point"});
  for (const auto& r : bands)
    text += csv_line({r.schedule, std::to_string(r.steps), num(r.x_min), num(r.lo), num(r.hi), num(r.repelling)});
  write_file_atomically(out_path(o, "schedule_bands.csv"), text);
}

json schedule_table(const ScheduleStudySpec& spec) {
  json t = json::array();
  for (const std::string& name : spec.schedule_names()) {
    const CoeffSchedule s = builtin_schedule(name);
    const ScheduleSource src = builtin_schedule_source(name);
    t.push_back({{"name", name}, {"emerging_optimizers_name", std::string(src.emerging_optimizers_name)},
                 {"origin", std::string(src.origin)}, {"triples", s.triples.size()},
                 {"after_last", std::string(after_last_name(s.after_last))}, {"lines", std::string(src.lines)},
                 {"safety_factor_applied", src.safety_factor_applied}, {"cubic", s.triples.front().c == 0}});
  }
  return t;
}

// The study's statistics, one row per (schedule, steps) and the extremes the conclusion cites.
struct StudyStats {
  const ScheduleStudySpec& spec;
  const std::vector<SweepRow>& shard;
  const std::vector<ScheduleAmplificationRow>& amp;
  const std::vector<DistributedRow>& dist;
  const std::vector<BandRow>& bands;

  double shard_divergence(const std::string& s, int k, const std::string& spectrum, int tp) const {
    return mean_of<SweepRow>(shard, [&](const SweepRow& r) { return r.coeffs == s && r.steps == k && r.spectrum == spectrum && r.tp == tp; },
                             [](const SweepRow& r) { return r.rel_diff_mean; });
  }
  // absolute: the amplification rows hold ratios to the gradient-level difference
  double amp_mean(const std::string& s, int k, const std::string& spectrum, double AmplificationRow::*m) const {
    return mean_of<ScheduleAmplificationRow>(amp, [&](const auto& r) { return r.schedule == s && r.row.steps == k && r.row.spectrum == spectrum; },
                                             [&](const auto& r) { return r.row.*m; });
  }
  double amp_abs(const std::string& s, int k, const std::string& spectrum, double AmplificationRow::*m) const {
    return mean_of<ScheduleAmplificationRow>(amp, [&](const auto& r) { return r.schedule == s && r.row.steps == k && r.row.spectrum == spectrum; },
                                             [&](const auto& r) { return r.row.*m * r.row.grad_rel; });
  }
  double dist_max(const std::string& s, int k, double DistributedRow::*m) const {
    return max_of<DistributedRow>(dist, [&](const DistributedRow& r) { return r.schedule == s && r.steps == k; },
                                  [&](const DistributedRow& r) { return r.*m; });
  }
  const BandRow& band(const std::string& s, int k, double x_min) const {
    for (const BandRow& b : bands)
      if (b.schedule == s && b.steps == k && b.x_min == x_min) return b;
    throw std::logic_error("schedule study: no band row for " + s);
  }

  // Whether, before step k, the band of [x_min, 1] crossed the next step's repelling fixed point:
  // from there NS only grows (cubic5 cycled past its five steps), and no rounding bound applies.
  bool left_basin(const std::string& s, int k) const {
    const double x_min = spec.band_lows.back();
    for (int j = 1; j < k; ++j)
      if (band(s, j, x_min).hi > band(s, j + 1, x_min).repelling) return true;
    return false;
  }

  json row(const std::string& s, int k) const {
    const double x_min = spec.band_lows.back();
    const BandRow& b = band(s, k, x_min);
    json tps = json::object();
    for (int tp : spec.shard.tps) tps[std::to_string(tp)] = shard_divergence(s, k, "gaussian", tp);
    const std::string low = spec.shard.spectra.back(), amp_low = spec.amplification.spectra.back();
    const double kernel_err = amp_abs(s, k, "gaussian", &AmplificationRow::kernel_err_standard);
    return {{"schedule", s},
            {"steps", k},
            {"diverged", !std::isfinite(kernel_err)},  // NS of the whole matrix itself is not finite
            {"left_basin", left_basin(s, k)},
            {"shard_gaussian", tps},
            {"shard_lowrank_max_tp", shard_divergence(s, k, low, spec.shard.tps.back())},
            {"kernel_err", kernel_err},
            {"allreduce_vs_whole", amp_abs(s, k, "gaussian", &AmplificationRow::ar_vs_whole)},
            {"order_amp_gaussian", amp_mean(s, k, "gaussian", &AmplificationRow::whole_amp)},
            {"order_amp_lowrank", amp_mean(s, k, amp_low, &AmplificationRow::whole_amp)},
            {"distributed_rel_diff_max", dist_max(s, k, &DistributedRow::rel_diff)},
            {"distributed_max_abs_diff", dist_max(s, k, &DistributedRow::max_abs_diff)},
            {"band", {{"x_min", x_min}, {"lo", b.lo}, {"hi", b.hi}, {"repelling", b.repelling}, {"inside", b.hi < b.repelling}}}};
  }

  // The distributed-NS setting for one schedule and step count (Megatron's, with quintic).
  json distributed(const std::string& s, int k) const {
    const double rel = dist_max(s, k, &DistributedRow::rel_diff), err = dist_max(s, k, &DistributedRow::kernel_err);
    return {{"schedule", s}, {"steps", k}, {"left_basin", left_basin(s, k)}, {"rel_diff_max", rel}, {"max_abs_diff", dist_max(s, k, &DistributedRow::max_abs_diff)},
            {"order_rel_diff_max", dist_max(s, k, &DistributedRow::order_rel_diff)}, {"kernel_err_max", err},
            {"cases", std::count_if(dist.begin(), dist.end(), [&](const DistributedRow& r) { return r.schedule == s && r.steps == k; })}};
  }

  // Over every schedule and step: the all-reduce strategies' distance from whole NS in units of
  // the kernel's own fp32 error (S5), at worst.
  json worst_allreduce_ratio() const {
    json w = {{"ratio", 0.0}};
    for (const auto& r : amp)
      if (!left_basin(r.schedule, r.row.steps))
      for (const auto& [ratio, strategy] : {std::pair{r.row.ar_vs_whole / r.row.kernel_err_standard, "gram_allreduce"},
                                            std::pair{r.row.rs_vs_whole / r.row.kernel_err_gram, "gram_restart_allreduce"}})
        if (std::isfinite(ratio) && ratio > w["ratio"].get<double>())
          w = {{"ratio", ratio}, {"schedule", r.schedule}, {"steps", r.row.steps}, {"spectrum", r.row.spectrum}, {"strategy", strategy}};
    double dist_ratio = 0;
    for (const auto& r : dist)
      if (!left_basin(r.schedule, r.steps)) dist_ratio = std::max(dist_ratio, r.rel_diff / r.kernel_err);
    w["distributed_setting_ratio"] = dist_ratio;
    return w;
  }

  // `shard` on Gaussian inputs at tp >= 2: the smallest divergence over every schedule and step.
  json shard_extremes() const {
    json lo = {{"rel_diff", std::numeric_limits<double>::max()}}, hi = {{"rel_diff", 0.0}};  // NaN rows (diverged NS) compare false
    for (const SweepRow& r : shard) {
      if (r.spectrum != "gaussian" || r.tp < 2 || left_basin(r.coeffs, r.steps)) continue;
      const json at = {{"rel_diff", r.rel_diff_mean}, {"schedule", r.coeffs}, {"steps", r.steps}, {"tp", r.tp}, {"axis", r.axis}};
      if (r.rel_diff_mean < lo["rel_diff"].get<double>()) lo = at;
      if (r.rel_diff_mean > hi["rel_diff"].get<double>()) hi = at;
    }
    return {{"min", lo}, {"max", hi}};
  }

  // How close each schedule's band of [x_min, 1] comes to the next step's repelling fixed point
  // (past it the iteration only grows): the first step after which the band has crossed it, if
  // any (`leaves_after`), else the smallest gap over the steps. Tightest first.
  json basin_margins() const {
    json out = json::array();
    const double x_min = spec.band_lows.back();
    for (const std::string& s : spec.schedule_names()) {
      const int fixed_steps = builtin_schedule_source(s).fixed_steps;
      json tightest = {{"schedule", s}, {"margin", std::numeric_limits<double>::max()}, {"leaves_after", nullptr}};
      for (int k = 1; k < spec.max_steps && tightest["leaves_after"].is_null(); ++k) {
        const BandRow &now = band(s, k, x_min), &next = band(s, k + 1, x_min);
        if (const double margin = next.repelling - now.hi; margin < tightest["margin"].get<double>())
          tightest = {{"schedule", s}, {"margin", margin}, {"after_steps", k}, {"band_hi", now.hi}, {"repelling", next.repelling},
                      // the gap between bf16 numbers at the band's top (8 significant bits)
                      {"bf16_spacing", std::ldexp(1.0, std::ilogb(now.hi) - 7)},
                      {"leaves_after", margin < 0 ? json(k) : json(nullptr)}, {"fixed_steps", fixed_steps}};
      }
      out.push_back(tightest);
    }
    std::sort(out.begin(), out.end(), [](const json& a, const json& b) { return a["margin"].get<double>() < b["margin"].get<double>(); });
    return out;
  }

  // The schedules whose band reaches 0 after the last step count: a step maps a singular value in
  // [x_min, 1] to exactly 0 (its image straddles 0), so the output can lose rank.
  json zero_bands() const {
    json out = json::array();
    for (const std::string& s : spec.schedule_names())
      if (!left_basin(s, spec.max_steps) && band(s, spec.max_steps, spec.band_lows.back()).lo == 0) out.push_back(s);
    return out;
  }

  // Reduction-order amplification of whole NS at the last step count, per schedule still in its
  // basin there, largest first.
  json amplification_at_max_steps() const {
    json out = json::array();
    const std::string low = spec.amplification.spectra.back();
    for (const std::string& s : spec.schedule_names())
      if (!left_basin(s, spec.max_steps))
        out.push_back({{"schedule", s}, {"lowrank", amp_mean(s, spec.max_steps, low, &AmplificationRow::whole_amp)},
                       {"gaussian", amp_mean(s, spec.max_steps, "gaussian", &AmplificationRow::whole_amp)}});
    std::sort(out.begin(), out.end(), [](const json& a, const json& b) { return a["lowrank"].get<double>() > b["lowrank"].get<double>(); });
    return out;
  }
};

}  // namespace

json schedule_stats(const ScheduleStudySpec& s, const std::vector<SweepRow>& shard, const std::vector<ScheduleAmplificationRow>& amp,
                    const std::vector<DistributedRow>& dist, const std::vector<BandRow>& bands) {
  const StudyStats sec{s, shard, amp, dist, bands};
  json rows = json::array(), distributed = json::array();
  for (const std::string& name : s.schedule_names())
    for (int k = 1; k <= s.max_steps; ++k) {
      rows.push_back(sec.row(name, k));
      distributed.push_back(sec.distributed(name, k));
    }
  return {{"schedules", schedule_table(s)},
          {"rows", rows},
          {"distributed", distributed},
          {"megatron",
           {{"claim", {{"value", kMegatronClaim}, {"steps", kMegatronClaimSteps}, {"source", "SPEC.md §4 S5, lines 195-196"}}},
            {"one_step", sec.distributed("quintic", 1)},
            {"at_claim", sec.distributed("quintic", kMegatronClaimSteps)}}},
          {"worst_allreduce_ratio", sec.worst_allreduce_ratio()},
          {"shard_gaussian", sec.shard_extremes()},
          {"amplification_at_max_steps", sec.amplification_at_max_steps()},
          {"basin_margins", sec.basin_margins()},
          {"zero_bands", sec.zero_bands()},
          {"band_x_min", s.band_lows.back()}};
}

json run_report_schedules(const ScheduleStudySpec& spec, const SectionOptions& o) {
  ScheduleStudySpec s = spec;
  s.shard.coeffs = s.schedule_names();
  const SweepOutcome shard = run_report_sweep(s.shard, "schedule_sweep", o);
  const auto amp = run_schedule_amplification(s);
  const auto dist = run_distributed_setting(s);
  const auto bands = schedule_bands(s);
  write_files(amp, s, dist, bands, o);
  return schedule_stats(s, shard.rows, amp, dist, bands);
}

}  // namespace nsv::engine
