#pragma once
// The report's section on coefficient schedules under sharding (schedule_study.hpp): runs the
// study, writes its data files and returns the statistics report.json cites ("schedules").
#include <nlohmann/json.hpp>

#include "nsv/engine/report_sections.hpp"
#include "nsv/engine/schedule_study.hpp"

namespace nsv::engine {

// Writes <out_dir>/schedule_sweep.csv, schedule_amplification.csv, schedule_distributed.csv and
// schedule_bands.csv.
nlohmann::json run_report_schedules(const ScheduleStudySpec&, const SectionOptions&);

// The statistics of the study's rows (the spec's shard.coeffs set to its schedules): one row per
// (schedule, steps) with `shard` on Gaussian inputs at each tp and on the low-rank spectrum at the
// largest, the amplification study's means (kernel_err and allreduce_vs_whole as absolute
// figures: each ratio times its grad_rel), the distributed setting's maxima, the band of
// [band_lows.back(), 1] and whether it left the basin (its top above the next step's repelling
// fixed point at some earlier step); Megatron's claim against quintic; the worst all-reduce ratio
// to the kernel's own error, the extremes of `shard`, the basin margins, the bands that reach 0
// and the amplification at max_steps, each over the schedules still in their basin.
nlohmann::json schedule_stats(const ScheduleStudySpec&, const std::vector<SweepRow>& shard,
                              const std::vector<ScheduleAmplificationRow>& amp, const std::vector<DistributedRow>& dist,
                              const std::vector<BandRow>& bands);

}  // namespace nsv::engine
