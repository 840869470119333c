#pragma once
// The output file of a sweep: opened fresh, or continued from the rows an interrupted run of the
// same sweep left in it (the CSV contract is in sweep_engine.hpp).
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "csv.hpp"
#include "sweep_plan.hpp"
#include "sweep_row.hpp"

namespace nsv::cli {

struct SweepFile {
  std::unique_ptr<AppendFile> file;             // rows are appended here as cases complete
  std::vector<std::optional<SweepRow>> rows;     // per case (plan order): the rows the file holds
  std::size_t resumed = 0;                      // how many of them
  std::size_t dropped_partial_bytes = 0;        // a partial last line, cut off
};

// With `resume` and an existing file: checks the file before changing anything (this version's
// header, whole rows, every row one of the plan's cases; throws std::invalid_argument saying
// which line is wrong), then cuts a partial last line off and appends to it. Otherwise the file
// is emptied and given the header.
SweepFile open_sweep_file(const std::string& path, bool resume, const SweepPlan&);

// Replaces the file by the header and `rows` in case order (atomically).
void write_sweep_file(const std::string& path, const std::vector<SweepRow>& rows);

std::string sweep_csv_line(const SweepRow&);

}  // namespace nsv::cli
