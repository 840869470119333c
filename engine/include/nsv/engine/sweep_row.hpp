#pragma once
// One row of a sweep CSV (`nsv sweep --out`, reports/*sweep.csv), typed, and its one codec: the
// column table in sweep_row.cpp names each column, says whether it belongs to the case key
// (the parameters that identify a case, matched by --resume) and how it is written and read.
//
// A SweepRow holds exactly what its CSV line holds (reals to 9 significant digits, seconds to
// 0.1 ms): a row computed now and the same row read back from a file are equal, so a resumed
// sweep and an uninterrupted one produce the same rows, CSV and JSON.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nsv/communicator.hpp"
#include "nsv/dtype.hpp"
#include "nsv/kernels.hpp"
#include "nsv/model.hpp"
#include "nsv/strategy.hpp"

namespace nsv::engine {

struct SweepRow {
  // The case key: the parameters of the case.
  std::int64_t rows = 0, cols = 0;
  std::string spectrum;  // canonical text (Spectrum::text())
  std::uint64_t seed = 0;
  Kernel kernel = Kernel::gram;
  DType dtype = DType::fp32;
  Accumulate accumulate = Accumulate::fp32;
  Products products = Products::symmetric;
  int steps = 0;
  std::string coeffs;  // the schedule's name (CoeffSchedule::name)
  std::vector<int> restart_at;  // the gram loop's restart list
  int tp = 1, axis = 0;
  std::int64_t grain = 1, heads = 0, kv_heads = 0;
  FusedKind fused = FusedKind::none;  // a fused projection's layout (heads, kv_heads: its query and KV heads)
  Strategy strategy = Strategy::shard;
  Target target = Target::whole;
  ReductionOrder reduction_order = ReductionOrder::rank;

  // The results: over the ranks that hold part of the matrix, rel_diff the mean and the max,
  // cosine and norm_ratio the mean; traffic, FLOPs and extra memory the max over ranks.
  double rel_diff_mean = 0, rel_diff_max = 0;
  std::vector<std::optional<double>> rel_diff_ranks;  // per rank; nullopt: the rank holds nothing
  double cosine = 0, norm_ratio = 0;
  std::uint64_t bytes_sent = 0, bytes_received = 0, messages = 0, flops = 0, extra_memory = 0;
  int collectives = 0;  // collective calls, all kinds together
  bool bit_identical = false;
  double seconds = 0;  // wall time of the case on one thread: the only column that varies run to run
};

// The column names, in file order.
const std::vector<std::string>& sweep_header();

// The row's CSV fields (sweep_header() order), and the row read back from them. decode throws
// std::invalid_argument naming the column and the value it could not read.
std::vector<std::string> encode_sweep_row(const SweepRow&);
SweepRow decode_sweep_row(const std::vector<std::string>& fields);

// One column's CSV text; throws std::out_of_range for a name not in sweep_header().
std::string sweep_field(const SweepRow&, std::string_view column);

// The key columns' fields joined as in the CSV: equal for two rows of the same case.
std::string sweep_row_key(const SweepRow&);

// `nsv sweep --json`'s object for a case: one member per column; numbers as numbers (a non-finite
// real as its text), enums as their names, bit_identical a bool, rel_diff_ranks an array (null
// for a rank holding nothing).
nlohmann::json sweep_row_json(const SweepRow&);

}  // namespace nsv::engine
