#pragma once
// The study of coefficient schedules under sharding: for every built-in schedule and
// NS step counts 1..max_steps,
//   - `shard`'s divergence from whole-matrix NS (a sweep: SweepSpec, its rows in the sweep CSV),
//   - the reduction-order amplification study per schedule (amplification.hpp: the all-reduce
//     strategies' distance from whole NS, their order noise, the kernel's own fp32-vs-fp64 error),
//   - the distributed-NS test setting of Megatron / Emerging-Optimizers (a small fp32 matrix on
//     a few ranks: `gram_allreduce`, Megatron's "distributed" mode, against whole-matrix NS,
//     Megatron's "duplicated" mode),
//   - the rounding-free convergence band (K5's band, nsv/schedule_theory.hpp): where the
//     normalized singular values in [x_min, 1] end up, and the last step's repelling fixed point.
#include <cstdint>
#include <string>
#include <vector>

#include "nsv/engine/amplification.hpp"
#include "nsv/engine/sweep_plan.hpp"

namespace nsv::engine {

struct ScheduleStudySpec {
  std::vector<std::string> schedules;  // built-in names; empty: all of them
  SweepSpec shard;                     // its coeffs and steps are set from the study
  AmplificationSpec amplification;     // run once per schedule (its coeffs set)
  std::int64_t megatron_rows = 128, megatron_cols = 64;
  int megatron_tp = 4, megatron_seeds = 4;
  std::vector<double> band_lows{1e-2, 1e-3};
  int max_steps = 10;

  std::vector<std::string> schedule_names() const;
  nlohmann::json to_json() const;
};

// Megatron's setting: `gram_allreduce` on tp even shards (either axis) vs NS of the whole
// matrix, same schedule, fp32, standard loop; Gaussian inputs, seeds 0..megatron_seeds-1.
struct DistributedRow {
  std::string schedule;
  int steps = 0, axis = 0, seed = 0;
  double rel_diff = 0;       // ||dist - whole||_F / ||whole||_F
  double max_abs_diff = 0;   // max |dist - whole| over the elements
  double order_rel_diff = 0; // the distributed run, Gram all-reduce in rank vs reverse order
  double kernel_err = 0;     // whole fp32 vs whole fp64, relative
};
std::vector<DistributedRow> run_distributed_setting(const ScheduleStudySpec&);

struct BandRow {
  std::string schedule;
  int steps = 0;
  double x_min = 0;          // the band's input interval is [x_min, 1]
  double lo = 0, hi = 0;     // its image after `steps` steps (exact, no rounding)
  double repelling = 0;      // the last step's repelling fixed point (+inf: none)
};
std::vector<BandRow> schedule_bands(const ScheduleStudySpec&);

// One row per (schedule, amplification row): the study's amplification.csv.
struct ScheduleAmplificationRow {
  std::string schedule;
  AmplificationRow row;
};
std::vector<ScheduleAmplificationRow> run_schedule_amplification(const ScheduleStudySpec&);

}  // namespace nsv::engine
