#pragma once
// The engine behind `nsv sweep` and the sweeps of `nsv report`: expands the cartesian product of
// the parameters into cases, runs them in parallel over cases (each case single-threaded inside,
// so every result is independent of the thread count), and keeps a crash-safe CSV with resume.
//
// CSV contract (one row per case, columns in sweep_header()):
//   - rows are appended, one write(2) per whole line, as cases complete; a kill at any moment
//     leaves whole rows plus at most one partial last line;
//   - with resume, a partial last line is dropped, cases whose key (the parameter columns) is
//     already in the file are not run again, and the rest are appended;
//   - when the sweep completes, the file is rewritten (atomically: temp file + rename) with the
//     rows in case order, so a resumed sweep ends with the same file as an uninterrupted one.
//     The only column that differs between two runs is `seconds` (the last column: wall time of
//     that case on one thread); every other byte is a deterministic function of the parameters.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "nsv/kernels.hpp"
#include "nsv/strategies.hpp"

namespace nsv::cli {

struct SweepSpec {
  std::vector<std::string> shapes{"512x1024"};
  std::vector<int> tps{2};
  std::vector<int> axes{0};
  std::vector<std::string> kernels{"gram"};
  std::vector<std::string> strategies{"shard"};
  std::vector<std::string> dtypes{"fp32"};
  std::vector<int> steps{5};
  std::vector<std::string> spectra{"gaussian"};
  std::vector<std::string> orders{"rank"};
  std::vector<std::string> coeffs{"keller"};
  int seeds = 1;
  std::int64_t heads = 0, kv_heads = 0, grain = 1;
  std::string accumulate = "fp32";
  std::string products = "symmetric";
  int restart_at = 2;

  nlohmann::json to_json() const;
};

struct SweepCase {
  std::size_t index = 0;  // position in the cartesian order
  std::int64_t rows = 0, cols = 0;
  std::string spectrum;   // canonical text (Spectrum::text())
  std::uint64_t seed = 0;
  NsConfig ns;
  int tp = 1, axis = 0;
  std::int64_t grain = 1, heads = 0, kv_heads = 0, head_dim = 0;
  Strategy strategy = Strategy::shard;
  ReductionOrder order = ReductionOrder::rank;

  std::vector<std::string> key_fields() const;  // the parameter columns
  std::string key() const;                       // key_fields joined
};

struct SweepPlan {
  std::vector<SweepCase> cases;
  std::map<std::string, std::size_t> skipped;  // reason -> count
  std::size_t skipped_total() const;
};

// Parses and checks every parameter (throws std::invalid_argument with a message naming the flag
// and value) and expands the product. Nothing is computed or written.
SweepPlan plan_sweep(const SweepSpec&);

std::vector<std::string> sweep_header();
std::size_t sweep_key_columns();  // the first N columns of sweep_header() form the case key

struct SweepRunOptions {
  std::string out;        // CSV path ("" = keep rows in memory only)
  bool resume = false;
  bool progress = true;   // drawn only when stderr is a terminal
  int threads = 0;        // 0: OpenMP's default
  std::string label = "sweep";
};

struct SweepOutcome {
  std::vector<std::vector<std::string>> rows;  // every case, in case order (CSV fields)
  std::size_t ran = 0, resumed = 0;
  std::map<std::string, std::size_t> skipped;
  std::size_t dropped_partial_bytes = 0;
  double seconds = 0;
  int threads = 1;
};

SweepOutcome run_sweep(const SweepSpec&, const SweepRunOptions&);

// A row as JSON: numbers as numbers, bit_identical as a bool, rel_diff_ranks as an array.
nlohmann::json row_json(const std::vector<std::string>& fields);
// Column lookup by name (throws std::out_of_range for an unknown column).
const std::string& field(const std::vector<std::string>& row, const std::string& column);
double number(const std::vector<std::string>& row, const std::string& column);

}  // namespace nsv::cli
