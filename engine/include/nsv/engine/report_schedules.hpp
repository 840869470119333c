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

}  // namespace nsv::engine
