// report.json's "schedules" (§6c of README.md; engine/src/report_schedules.cpp, schedule_study.cpp):
// the study's rows each against its definition, and its statistics against theirs, evaluated
// here by scanning every row.
//
// SC1  each row of the distributed setting (Megatron's: gram_allreduce on tp even shards against
//      whole-matrix NS, fp32, the standard loop, Gaussian inputs) is its definition: the product
//      schedule x steps x axis x seed in that order, rel_diff and max_abs_diff of the distributed
//      result from NS of the whole, the same run with its Grams reduced in reverse order against
//      rank order, and the whole matrix's fp32 error against fp64 (compared with ==: the
//      reference's bits depend only on input and configuration).
// SC2  each band row is schedule_band(schedule, k, [x_min, 1]) and the k-th step's repelling fixed
//      point (the scalar theory itself is ST1 and ST2), for every schedule, x_min and k.
// SC3  the study's amplification rows are the amplification study (AM1 checks each of its rows)
//      run with each schedule and the study's step counts, in the order of the schedules.
// SC4  the statistics, on rows drawn with results that are multiples of 1/64 (so every mean,
//      maximum and product compares with ==) and bands drawn so that some schedules leave their
//      basin: each (schedule, steps) row (the means of `shard` at each tp on Gaussian inputs and on
//      the low-rank spectrum at the largest tp; the amplification means, kernel_err and
//      allreduce_vs_whole as ratio x grad_rel; whether NS diverged; the distributed maxima; the
//      band and whether it is inside); the distributed table and its cases; Megatron's two rows;
//      the worst all-reduce ratio to the kernel's error and the distributed one; the extremes of
//      `shard`; the basin margins (the first step whose band top passes the next step's repelling
//      point, else the tightest gap), sorted; the bands that reach 0; the amplification at
//      max_steps, sorted; each over the schedules and steps still in their basin where the
//      definition says so. The low-rank spectra of the sweep and of the amplification study are
//      drawn different, so a statistic reading one for the other is seen.
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "check.hpp"
#include "studies/exact_values.hpp"
#include "nsv/backend.hpp"
#include "nsv/coeffs.hpp"
#include "nsv/engine/report_schedules.hpp"
#include "nsv/engine/schedule_study.hpp"
#include "nsv/engine/sweep_row.hpp"
#include "nsv/layout.hpp"
#include "nsv/metrics.hpp"
#include "nsv/muon.hpp"
#include "nsv/schedule_theory.hpp"
#include "nsv/spectra.hpp"
#include "nsv/strategies.hpp"

using namespace nsv;
using namespace nsv::engine;
using nlohmann::json;
using nsv::checks::exact_mean;
using nsv::checks::item_where;
using nsv::checks::sixty_fourths;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// quintic is always drawn (Megatron's rows read it), with others; max_steps >= 5, Megatron's claim.
rc::Gen<ScheduleStudySpec> small_schedule_studies() {
  return rc::gen::exec([] {
    ScheduleStudySpec spec;
    spec.schedules = {"quintic"};
    for (const std::string& name : builtin_schedule_names())
      if (name != "quintic" && *rc::gen::weightedElement<bool>({{1, true}, {2, false}})) spec.schedules.push_back(name);
    spec.max_steps = *rc::gen::element(5, 6);
    spec.shard.tps = *rc::gen::element(std::vector<int>{2, 4}, std::vector<int>{1, 2, 8}, std::vector<int>{2});
    spec.shard.spectra = {"gaussian", *rc::gen::element(std::string("lowrank:8"), std::string("lowrank:4"))};
    spec.amplification.spectra = {"gaussian", "lowrank:16"};
    spec.shard.coeffs = spec.schedule_names();
    return spec;
  });
}

struct StudyRows {
  std::vector<SweepRow> shard;
  std::vector<ScheduleAmplificationRow> amp;
  std::vector<DistributedRow> dist;
  std::vector<BandRow> bands;
};

rc::Gen<double> positive_sixty_fourths(int most) {
  return rc::gen::map(rc::gen::element(1, 2, 3, 5, 8, 13, 21, 34, 55, most), [](int k) { return k / 64.0; });
}

rc::Gen<StudyRows> study_rows(const ScheduleStudySpec& spec) {
  return rc::gen::exec([spec] {
    StudyRows d;
    for (const std::string& s : spec.schedule_names())
      for (int k = 1; k <= spec.max_steps; ++k) {
        for (const std::string& spectrum : spec.shard.spectra)
          for (int tp : spec.shard.tps)
            for (int axis : {0, 1}) {
              if (*rc::gen::weightedElement<bool>({{1, true}, {7, false}})) continue;  // a missing case: means over fewer
              SweepRow r;
              r.coeffs = s, r.steps = k, r.spectrum = spectrum, r.tp = tp, r.axis = axis;
              r.rel_diff_mean = *sixty_fourths(256);
              d.shard.push_back(r);
            }
        for (const std::string& spectrum : spec.amplification.spectra)
          for (int seed = 0; seed < 2; ++seed) {
            AmplificationRow r;
            r.spectrum = spectrum, r.seed = seed, r.axis = 1, r.steps = k;
            r.grad_rel = *positive_sixty_fourths(64);
            r.whole_amp = *sixty_fourths(256), r.ar_order_amp = *sixty_fourths(256), r.ar_vs_whole = *sixty_fourths(256);
            r.rs_order_amp = *sixty_fourths(256), r.rs_vs_whole = *sixty_fourths(256);
            r.kernel_err_standard = *rc::gen::weightedElement<bool>({{1, true}, {15, false}}) ? kInf : *positive_sixty_fourths(128);
            r.kernel_err_gram = *positive_sixty_fourths(128);
            d.amp.push_back({s, r});
          }
        for (int axis : {0, 1})
          for (int seed = 0; seed < 2; ++seed)
            d.dist.push_back({s, k, axis, seed, *sixty_fourths(64), *sixty_fourths(64), *sixty_fourths(64), *positive_sixty_fourths(64)});
      }
    // Bands: tops above 1 and repelling points (or none) near them, so that some schedules leave
    // their basin at some step and others never do; lo sometimes exactly 0.
    for (const std::string& s : spec.schedule_names())
      for (double x_min : spec.band_lows)
        for (int k = 1; k <= spec.max_steps; ++k)
          d.bands.push_back({s, k, x_min, *rc::gen::weightedElement<bool>({{1, true}, {3, false}}) ? 0.0 : *sixty_fourths(32),
                             1 + *sixty_fourths(24), *rc::gen::weightedElement<bool>({{1, true}, {3, false}}) ? kInf : 1 + *sixty_fourths(24)});
    return d;
  });
}

// The definitions, written out over the rows.
struct Definitions {
  const ScheduleStudySpec& spec;
  const StudyRows& d;

  double x_min() const { return spec.band_lows.back(); }
  const BandRow& band(const std::string& s, int k) const {
    for (const BandRow& b : d.bands)
      if (b.schedule == s && b.steps == k && b.x_min == x_min()) return b;
    throw std::out_of_range("no band row for " + s + " at step " + std::to_string(k));
  }
  // Left its basin before step k: at some step j < k the band's top passed step j+1's repelling point.
  bool left(const std::string& s, int k) const {
    for (int j = 1; j < k; ++j)
      if (band(s, j).hi > band(s, j + 1).repelling) return true;
    return false;
  }
  double shard_mean(const std::string& s, int k, const std::string& spectrum, int tp) const {
    std::vector<double> v;
    for (const SweepRow& r : d.shard)
      if (r.coeffs == s && r.steps == k && r.spectrum == spectrum && r.tp == tp) v.push_back(r.rel_diff_mean);
    return exact_mean(v);
  }
  double amp_mean(const std::string& s, int k, const std::string& spectrum, double AmplificationRow::*m, bool absolute) const {
    std::vector<double> v;
    for (const ScheduleAmplificationRow& r : d.amp)
      if (r.schedule == s && r.row.steps == k && r.row.spectrum == spectrum) v.push_back(absolute ? r.row.*m * r.row.grad_rel : r.row.*m);
    return exact_mean(v);
  }
  double dist_max(const std::string& s, int k, double DistributedRow::*m) const {
    double most = 0;
    for (const DistributedRow& r : d.dist)
      if (r.schedule == s && r.steps == k) most = std::max(most, r.*m);
    return most;
  }
  void assert_distributed(const json& got, const std::string& s, int k) const {
    std::size_t cases = 0;
    for (const DistributedRow& r : d.dist) cases += r.schedule == s && r.steps == k;
    RC_ASSERT(got.at("schedule").get<std::string>() == s && got.at("steps").get<int>() == k);
    RC_ASSERT(got.at("left_basin").get<bool>() == left(s, k));
    RC_ASSERT(got.at("rel_diff_max").get<double>() == dist_max(s, k, &DistributedRow::rel_diff));
    RC_ASSERT(got.at("max_abs_diff").get<double>() == dist_max(s, k, &DistributedRow::max_abs_diff));
    RC_ASSERT(got.at("order_rel_diff_max").get<double>() == dist_max(s, k, &DistributedRow::order_rel_diff));
    RC_ASSERT(got.at("kernel_err_max").get<double>() == dist_max(s, k, &DistributedRow::kernel_err));
    RC_ASSERT(got.at("cases").get<std::size_t>() == cases);
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(study_schedules)

NSV_PROPERTY(SC1_each_distributed_row_is_gram_allreduce_against_whole_ns_on_its_input, ()) {
  ScheduleStudySpec spec;
  spec.schedules = {*rc::gen::elementOf(builtin_schedule_names())};
  spec.max_steps = *rc::gen::element(1, 2, 3);
  spec.megatron_rows = *rc::gen::element<std::int64_t>(8, 12, 16);
  spec.megatron_cols = *rc::gen::element<std::int64_t>(6, 8, 16);
  spec.megatron_tp = *rc::gen::element(2, 3, 4);
  spec.megatron_seeds = *rc::gen::element(1, 2);
  const std::vector<DistributedRow> rows = run_distributed_setting(spec);
  RC_ASSERT(rows.size() == static_cast<std::size_t>(spec.max_steps * 2 * spec.megatron_seeds));
  const auto backend = make_cpu_backend();
  std::size_t at = 0;
  for (int k = 1; k <= spec.max_steps; ++k)
    for (int axis : {0, 1})
      for (int seed = 0; seed < spec.megatron_seeds; ++seed) {
        const DistributedRow& r = rows.at(at++);
        RC_ASSERT(r.schedule == spec.schedules[0] && r.steps == k && r.axis == axis && r.seed == seed);
        const MatD g = make_matrix(parse_spectrum("gaussian"), spec.megatron_rows, spec.megatron_cols, static_cast<std::uint64_t>(seed));
        NsConfig cfg;
        cfg.kernel = Kernel::standard;
        cfg.steps = k;
        cfg.coeffs = builtin_schedule(spec.schedules[0]);
        NsConfig cfg64 = cfg;
        cfg64.dtype = DType::fp64;
        const MatD whole = newton_schulz(*backend, g, cfg);
        const Layout layout = even_layout(axis, axis == 0 ? g.rows() : g.cols(), spec.megatron_tp);
        const ShardedMatrix shards = shard_matrix(g, layout);
        const auto run = [&](ReductionOrder order) {
          return assemble(run_strategy(Strategy::gram_allreduce, *backend, shards, cfg, {order, DType::fp32}).outputs, layout);
        };
        const MatD dist = run(ReductionOrder::rank);
        RC_ASSERT(r.rel_diff == rel_diff(dist, whole));
        RC_ASSERT(r.max_abs_diff == max_abs_diff(dist, whole));
        RC_ASSERT(r.order_rel_diff == rel_diff(run(ReductionOrder::reverse), dist));
        RC_ASSERT(r.kernel_err == rel_diff(whole, newton_schulz(*backend, g, cfg64)));
      }
}

NSV_PROPERTY(SC2_each_band_row_is_the_schedules_band_and_repelling_point_at_its_step, ()) {
  ScheduleStudySpec spec;
  spec.max_steps = *rc::gen::element(1, 4, 10);
  const std::vector<BandRow> rows = schedule_bands(spec);
  std::size_t at = 0;
  for (const std::string& s : builtin_schedule_names())
    for (double x_min : spec.band_lows)
      for (int k = 1; k <= spec.max_steps; ++k) {
        const BandRow& r = rows.at(at++);
        const CoeffSchedule schedule = builtin_schedule(s);
        const ScalarInterval band = schedule_band(schedule, k, {x_min, 1.0});
        RC_ASSERT(r.schedule == s && r.steps == k && r.x_min == x_min);
        RC_ASSERT(r.lo == band.lo && r.hi == band.hi);
        RC_ASSERT(r.repelling == repelling_fixed_point(schedule.at_step(k - 1)));
      }
  RC_ASSERT(at == rows.size());
}

NSV_PROPERTY(SC3_the_schedule_amplification_is_the_amplification_study_run_with_each_schedule, ()) {
  ScheduleStudySpec spec;
  spec.schedules = {"quintic", *rc::gen::elementOf(builtin_schedule_names())};
  spec.max_steps = *rc::gen::element(1, 2);
  spec.amplification.rows = 8, spec.amplification.cols = 12, spec.amplification.tp = 3;
  spec.amplification.spectra = {"gaussian"}, spec.amplification.axes = {1}, spec.amplification.seeds = 1;
  spec.amplification.max_steps = 7;  // replaced by the study's max_steps
  spec.amplification.threads = 1, spec.amplification.progress = false;
  const std::vector<ScheduleAmplificationRow> rows = run_schedule_amplification(spec);
  std::size_t at = 0;
  for (const std::string& s : spec.schedule_names()) {
    AmplificationSpec a = spec.amplification;
    a.coeffs = s;
    a.max_steps = spec.max_steps;
    for (const AmplificationRow& want : run_amplification(a)) {
      const ScheduleAmplificationRow& got = rows.at(at++);
      RC_ASSERT(got.schedule == s && got.row.steps == want.steps && got.row.spectrum == want.spectrum);
      RC_ASSERT(got.row.grad_rel == want.grad_rel && got.row.whole_amp == want.whole_amp);
      RC_ASSERT(got.row.ar_vs_whole == want.ar_vs_whole && got.row.rs_vs_whole == want.rs_vs_whole);
      RC_ASSERT(got.row.kernel_err_standard == want.kernel_err_standard && got.row.kernel_err_gram == want.kernel_err_gram);
    }
  }
  RC_ASSERT(at == rows.size());
}

NSV_PROPERTY(SC4_each_schedule_statistic_is_its_definition_over_the_rows, ()) {
  const ScheduleStudySpec spec = *small_schedule_studies();
  const StudyRows d = *study_rows(spec);
  const json got = schedule_stats(spec, d.shard, d.amp, d.dist, d.bands);
  const Definitions def{spec, d};
  const std::vector<std::string> names = spec.schedule_names();
  const std::string shard_low = spec.shard.spectra.back(), amp_low = spec.amplification.spectra.back();

  RC_ASSERT(got.at("schedules").size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    const json& t = got.at("schedules").at(i);
    const CoeffSchedule s = builtin_schedule(names[i]);
    RC_ASSERT(t.at("name").get<std::string>() == names[i]);
    RC_ASSERT(t.at("triples").get<std::size_t>() == s.triples.size());
    RC_ASSERT(t.at("cubic").get<bool>() == (s.triples.front().c == 0));
  }

  std::size_t line = 0;
  for (const std::string& s : names)
    for (int k = 1; k <= spec.max_steps; ++k) {
      const json& r = got.at("rows").at(line);
      const json& dist = got.at("distributed").at(line++);
      RC_ASSERT(r.at("schedule").get<std::string>() == s && r.at("steps").get<int>() == k);
      RC_ASSERT(r.at("left_basin").get<bool>() == def.left(s, k));
      for (int tp : spec.shard.tps) RC_ASSERT(r.at("shard_gaussian").at(std::to_string(tp)).get<double>() == def.shard_mean(s, k, "gaussian", tp));
      RC_ASSERT(r.at("shard_gaussian").size() == spec.shard.tps.size());
      RC_ASSERT(r.at("shard_lowrank_max_tp").get<double>() == def.shard_mean(s, k, shard_low, spec.shard.tps.back()));
      const double kernel_err = def.amp_mean(s, k, "gaussian", &AmplificationRow::kernel_err_standard, true);
      RC_ASSERT(r.at("kernel_err").get<double>() == kernel_err);
      RC_ASSERT(r.at("diverged").get<bool>() == !std::isfinite(kernel_err));
      RC_ASSERT(r.at("allreduce_vs_whole").get<double>() == def.amp_mean(s, k, "gaussian", &AmplificationRow::ar_vs_whole, true));
      RC_ASSERT(r.at("order_amp_gaussian").get<double>() == def.amp_mean(s, k, "gaussian", &AmplificationRow::whole_amp, false));
      RC_ASSERT(r.at("order_amp_lowrank").get<double>() == def.amp_mean(s, k, amp_low, &AmplificationRow::whole_amp, false));
      RC_ASSERT(r.at("distributed_rel_diff_max").get<double>() == def.dist_max(s, k, &DistributedRow::rel_diff));
      RC_ASSERT(r.at("distributed_max_abs_diff").get<double>() == def.dist_max(s, k, &DistributedRow::max_abs_diff));
      const BandRow& b = def.band(s, k);
      RC_ASSERT(r.at("band").at("x_min").get<double>() == def.x_min());
      RC_ASSERT(r.at("band").at("lo").get<double>() == b.lo && r.at("band").at("hi").get<double>() == b.hi);
      RC_ASSERT(r.at("band").at("repelling").get<double>() == b.repelling);
      RC_ASSERT(r.at("band").at("inside").get<bool>() == (b.hi < b.repelling));
      def.assert_distributed(dist, s, k);
    }
  RC_ASSERT(line == got.at("rows").size() && line == got.at("distributed").size());
  def.assert_distributed(got.at("megatron").at("one_step"), "quintic", 1);
  def.assert_distributed(got.at("megatron").at("at_claim"), "quintic", got.at("megatron").at("claim").at("steps").get<int>());

  // The worst all-reduce ratio: over the amplification rows in their basin, each strategy's
  // distance from whole NS over its loop's own error (gram_allreduce: the standard loop;
  // gram_restart_allreduce: the Gram loop), finite ones only; the row it names attains it.
  double worst = 0;
  for (const auto& r : d.amp)
    if (!def.left(r.schedule, r.row.steps))
      for (const double ratio : {r.row.ar_vs_whole / r.row.kernel_err_standard, r.row.rs_vs_whole / r.row.kernel_err_gram})
        if (std::isfinite(ratio)) worst = std::max(worst, ratio);
  const json& w = got.at("worst_allreduce_ratio");
  RC_ASSERT(w.at("ratio").get<double>() == worst);
  if (worst > 0) {
    const bool named = std::any_of(d.amp.begin(), d.amp.end(), [&](const ScheduleAmplificationRow& r) {
      if (r.schedule != w.at("schedule").get<std::string>() || r.row.steps != w.at("steps").get<int>() ||
          r.row.spectrum != w.at("spectrum").get<std::string>() || def.left(r.schedule, r.row.steps))
        return false;
      const double ratio = w.at("strategy").get<std::string>() == "gram_allreduce" ? r.row.ar_vs_whole / r.row.kernel_err_standard
                                                                                   : r.row.rs_vs_whole / r.row.kernel_err_gram;
      return ratio == worst;
    });
    RC_ASSERT(named);
  }
  double dist_worst = 0;
  for (const DistributedRow& r : d.dist)
    if (!def.left(r.schedule, r.steps)) dist_worst = std::max(dist_worst, r.rel_diff / r.kernel_err);
  RC_ASSERT(w.at("distributed_setting_ratio").get<double>() == dist_worst);

  // shard's extremes on Gaussian inputs at tp >= 2, in the basin; each names a row that attains it.
  std::vector<const SweepRow*> candidates;
  for (const SweepRow& r : d.shard)
    if (r.spectrum == "gaussian" && r.tp >= 2 && !def.left(r.coeffs, r.steps)) candidates.push_back(&r);
  for (const char* end : {"min", "max"}) {
    const json& e = got.at("shard_gaussian").at(end);
    if (candidates.empty()) {
      RC_ASSERT(e.at("rel_diff").get<double>() == (std::string(end) == "min" ? std::numeric_limits<double>::max() : 0.0));
      continue;
    }
    const auto extreme = std::string(end) == "min"
                             ? std::min_element(candidates.begin(), candidates.end(), [](auto a, auto b) { return a->rel_diff_mean < b->rel_diff_mean; })
                             : std::max_element(candidates.begin(), candidates.end(), [](auto a, auto b) { return a->rel_diff_mean < b->rel_diff_mean; });
    RC_ASSERT(e.at("rel_diff").get<double>() == (*extreme)->rel_diff_mean);
    if (std::string(end) == "max" && (*extreme)->rel_diff_mean == 0) {  // the maximum starts at 0: no row exceeds it
      RC_ASSERT(!e.contains("schedule"));
      continue;
    }
    RC_ASSERT(std::any_of(candidates.begin(), candidates.end(), [&](const SweepRow* r) {
      return r->rel_diff_mean == e.at("rel_diff").get<double>() && r->coeffs == e.at("schedule").get<std::string>() &&
             r->steps == e.at("steps").get<int>() && r->tp == e.at("tp").get<int>() && r->axis == e.at("axis").get<int>();
    }));
  }

  // Basin margins: per schedule, the gaps (next step's repelling point - this step's band top)
  // over k = 1..max_steps-1 up to the first negative one; the smallest (the first of equals), and
  // where a gap is negative, the step after which the band left. Sorted by margin.
  const json& margins = got.at("basin_margins");
  RC_ASSERT(margins.size() == names.size());
  for (std::size_t i = 1; i < margins.size(); ++i) RC_ASSERT(margins[i - 1].at("margin").get<double>() <= margins[i].at("margin").get<double>());
  for (const std::string& s : names) {
    const json& m = item_where(margins, "schedule", s);
    double tightest = std::numeric_limits<double>::max();
    int after = 0;
    for (int k = 1; k < spec.max_steps; ++k) {
      const double gap = def.band(s, k + 1).repelling - def.band(s, k).hi;
      if (gap < tightest) tightest = gap, after = k;
      if (gap < 0) break;
    }
    RC_ASSERT(m.at("margin").get<double>() == tightest);
    if (after == 0) {
      RC_ASSERT(!m.contains("after_steps") && m.at("leaves_after").is_null());
      continue;
    }
    RC_ASSERT(m.at("after_steps").get<int>() == after);
    RC_ASSERT(m.at("band_hi").get<double>() == def.band(s, after).hi);
    RC_ASSERT(m.at("repelling").get<double>() == def.band(s, after + 1).repelling);
    RC_ASSERT(m.at("bf16_spacing").get<double>() == std::ldexp(1.0, std::ilogb(def.band(s, after).hi) - 7));
    const bool leaves = tightest < 0 ? m.at("leaves_after").get<int>() == after : m.at("leaves_after").is_null();
    RC_ASSERT(leaves);
    RC_ASSERT(m.at("fixed_steps").get<int>() == builtin_schedule_source(s).fixed_steps);
  }

  // The bands that reach 0 after max_steps, and the amplification at max_steps (largest low-rank
  // first), over the schedules still in their basin there.
  json zero = json::array();
  std::vector<std::string> in_basin;
  for (const std::string& s : names)
    if (!def.left(s, spec.max_steps)) {
      in_basin.push_back(s);
      if (def.band(s, spec.max_steps).lo == 0) zero.push_back(s);
    }
  RC_ASSERT(got.at("zero_bands") == zero);
  const json& amps = got.at("amplification_at_max_steps");
  RC_ASSERT(amps.size() == in_basin.size());
  for (std::size_t i = 1; i < amps.size(); ++i) RC_ASSERT(amps[i - 1].at("lowrank").get<double>() >= amps[i].at("lowrank").get<double>());
  for (const std::string& s : in_basin) {
    const json& a = item_where(amps, "schedule", s);
    RC_ASSERT(a.at("lowrank").get<double>() == def.amp_mean(s, spec.max_steps, amp_low, &AmplificationRow::whole_amp, false));
    RC_ASSERT(a.at("gaussian").get<double>() == def.amp_mean(s, spec.max_steps, "gaussian", &AmplificationRow::whole_amp, false));
  }
  RC_ASSERT(got.at("band_x_min").get<double>() == def.x_min());
}

BOOST_AUTO_TEST_SUITE_END()
