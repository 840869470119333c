#pragma once
// The engine behind `nsv sweep` and the sweeps of `nsv report`: runs the cases of a plan
// (sweep_plan.hpp) in parallel over cases (each case single-threaded inside, so every result is
// independent of the thread count), on threads or over the processes of an MPI job, and keeps a
// crash-safe CSV with resume (one writer).
//
// CSV contract (one row per case, columns in sweep_header(), sweep_row.hpp):
//   - rows are appended, one write(2) per whole line, as cases complete; a kill at any moment
//     leaves whole rows plus at most one partial last line;
//   - with resume, a partial last line is dropped, cases whose key (the parameter columns) is
//     already in the file are not run again, and the rest are appended;
//   - when the sweep completes, the file is rewritten (atomically: temp file + rename) with the
//     rows in case order, so a resumed sweep ends with the same file as an uninterrupted one.
//     The only column that differs between two runs is `seconds` (the last column: wall time of
//     that case on one thread); every other byte is a deterministic function of the parameters.
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nsv/engine/sweep_plan.hpp"
#include "nsv/engine/sweep_row.hpp"

namespace nsv::engine {

// The processes a sweep spreads over (sweep_processes.hpp: an MPI job). Every process runs
// run_sweep with the same spec; items go to whichever process is free; one process, the writer,
// owns the CSV, the resume and the outcome.
class SweepProcesses {
 public:
  virtual ~SweepProcesses() = default;
  virtual int count() const = 0;
  virtual bool is_writer() const = 0;
  // compute(i) on some process for every i < n; consume(i, result) on the writer, one at a time,
  // as results arrive. Returns the first error a compute threw ("" when none did).
  virtual std::string run(std::size_t n, const std::function<std::string(std::size_t)>& compute,
                          const std::function<void(std::size_t, std::string&&)>& consume) = 0;
  // The writer's values on every process.
  virtual void share(std::vector<std::string>&) = 0;
  virtual void share(std::vector<std::size_t>&) = 0;
  // Throws on every process when some process was started with another plan (its spec and
  // options, as JSON) than the writer: nothing is run or written then.
  virtual void require_same_plan(const nlohmann::json& plan) = 0;
};

struct SweepRunOptions {
  std::string out;        // CSV path ("" = keep rows in memory only)
  bool resume = false;
  bool progress = true;   // drawn only when stderr is a terminal
  int threads = 0;        // 0: OpenMP's default
  std::string label = "sweep";
  SweepProcesses* processes = nullptr;  // null: this process alone, `threads` threads over cases
};

struct SweepOutcome {
  std::vector<SweepRow> rows;  // every case, in case order
  std::size_t ran = 0, resumed = 0;
  std::map<std::string, std::size_t> skipped;  // reason -> count
  std::size_t dropped_partial_bytes = 0;
  double seconds = 0;
  int threads = 1;
  int processes = 1;
};

SweepOutcome run_sweep(const SweepSpec&, const SweepRunOptions&);

}  // namespace nsv::engine
