#include "nsv/engine/schedule_study.hpp"

#include <omp.h>

#include <stdexcept>

#include "nsv/backend.hpp"
#include "nsv/layout.hpp"
#include "nsv/metrics.hpp"
#include "nsv/schedule_theory.hpp"
#include "nsv/spectra.hpp"
#include "nsv/strategies.hpp"

namespace nsv::engine {

std::vector<std::string> ScheduleStudySpec::schedule_names() const {
  return schedules.empty() ? builtin_schedule_names() : schedules;
}

nlohmann::json ScheduleStudySpec::to_json() const {
  const AmplificationSpec& a = amplification;
  return {{"schedules", schedule_names()},
          {"max_steps", max_steps},
          {"shard", shard.to_json()},
          {"amplification",
           {{"rows", a.rows}, {"cols", a.cols}, {"spectra", a.spectra}, {"axes", a.axes}, {"seeds", a.seeds}, {"tp", a.tp}}},
          {"distributed", {{"rows", megatron_rows}, {"cols", megatron_cols}, {"tp", megatron_tp}, {"seeds", megatron_seeds}}},
          {"band_lows", band_lows}};
}

std::vector<DistributedRow> run_distributed_setting(const ScheduleStudySpec& spec) {
  struct Job {
    std::string schedule;
    int steps, axis, seed;
  };
  std::vector<Job> jobs;
  for (const std::string& name : spec.schedule_names())
    for (int k = 1; k <= spec.max_steps; ++k)
      for (int axis : {0, 1})
        for (int seed = 0; seed < spec.megatron_seeds; ++seed) jobs.push_back({name, k, axis, seed});

  const auto backend = make_cpu_backend();
  std::vector<DistributedRow> rows(jobs.size());
  std::string error;
  omp_set_max_active_levels(1);
  const auto n = static_cast<std::ptrdiff_t>(jobs.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (std::ptrdiff_t j = 0; j < n; ++j) {
    try {
      const Job& job = jobs[static_cast<std::size_t>(j)];
      const MatD g = make_matrix(parse_spectrum("gaussian"), spec.megatron_rows, spec.megatron_cols,
                                 static_cast<std::uint64_t>(job.seed));
      NsConfig cfg;
      cfg.kernel = Kernel::standard;  // Emerging-Optimizers' loop: A = X X^T, B = b A + c A A, X = a X + B X
      cfg.steps = job.steps;
      cfg.coeffs = builtin_schedule(job.schedule);
      const MatD whole = newton_schulz(*backend, g, cfg);
      NsConfig cfg64 = cfg;
      cfg64.dtype = DType::fp64;
      const Layout layout = even_layout(job.axis, job.axis == 0 ? g.rows() : g.cols(), spec.megatron_tp);
      const ShardedMatrix m = shard_matrix(g, layout);
      const auto run = [&](ReductionOrder order) {
        return assemble(run_strategy(Strategy::gram_allreduce, *backend, m, cfg, {order, DType::fp32}).outputs, layout);
      };
      const MatD dist = run(ReductionOrder::rank);
      DistributedRow& r = rows[static_cast<std::size_t>(j)];
      r = {job.schedule, job.steps, job.axis, job.seed, rel_diff(dist, whole), max_abs_diff(dist, whole),
           rel_diff(run(ReductionOrder::reverse), dist), rel_diff(whole, newton_schulz(*backend, g, cfg64))};
    } catch (const std::exception& e) {
#pragma omp critical(distributed_setting_error)
      if (error.empty()) error = e.what();
    }
  }
  if (!error.empty()) throw std::runtime_error("distributed-NS setting: " + error);
  return rows;
}

std::vector<BandRow> schedule_bands(const ScheduleStudySpec& spec) {
  std::vector<BandRow> rows;
  for (const std::string& name : spec.schedule_names()) {
    const CoeffSchedule s = builtin_schedule(name);
    for (double x_min : spec.band_lows)
      for (int k = 1; k <= spec.max_steps; ++k) {
        const ScalarInterval band = schedule_band(s, k, {x_min, 1.0});
        rows.push_back({name, k, x_min, band.lo, band.hi, repelling_fixed_point(s.at_step(k - 1))});
      }
  }
  return rows;
}

std::vector<ScheduleAmplificationRow> run_schedule_amplification(const ScheduleStudySpec& spec) {
  std::vector<ScheduleAmplificationRow> rows;
  for (const std::string& name : spec.schedule_names()) {
    AmplificationSpec a = spec.amplification;
    a.coeffs = name;
    a.max_steps = spec.max_steps;
    for (const AmplificationRow& r : run_amplification(a)) rows.push_back({name, r});
  }
  return rows;
}

}  // namespace nsv::engine
