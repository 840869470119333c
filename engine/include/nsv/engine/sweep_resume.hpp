#pragma once
// The output file of a sweep: opened fresh, or continued from the rows an interrupted run of the
// same sweep left in it (the CSV contract is in sweep_engine.hpp).
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nsv/engine/csv.hpp"
#include "nsv/engine/sweep_plan.hpp"
#include "nsv/engine/sweep_row.hpp"

namespace nsv::engine {

// Rows are appended, as cases complete, to OUT.partial (partial_sweep_path), never to OUT itself:
// OUT is only ever replaced, atomically, by the complete result (finish_sweep_file), so a run
// that fails or is killed leaves an existing OUT as it was, and its completed cases in
// OUT.partial for --resume.
std::string partial_sweep_path(const std::string& out);

struct SweepFile {
  std::unique_ptr<AppendFile> file;             // OUT.partial: rows are appended here as cases complete
  std::vector<std::optional<SweepRow>> rows;     // per case (plan order): the rows already done
  std::size_t resumed = 0;                      // how many of them
  std::size_t dropped_partial_bytes = 0;        // a partial last line of OUT.partial, cut off
};

// With `resume`: the rows of OUT (a finished earlier run) and of OUT.partial (an interrupted
// one), each file checked before anything changes (this version's header, whole rows, every field
// as nsv writes it, every row one of the plan's cases; std::invalid_argument names the line).
// A partial last line of OUT.partial is cut off and rows are appended to it. Without `resume`,
// OUT.partial starts empty. OUT is not touched.
SweepFile open_sweep_file(const std::string& out, bool resume, const SweepPlan&);

// Replaces OUT by the header and `rows` in case order (atomically), then removes OUT.partial.
void finish_sweep_file(const std::string& out, const std::vector<SweepRow>& rows);

std::string sweep_csv_line(const SweepRow&);

}  // namespace nsv::engine
