#pragma once
// The sweep CSV rows as `nsv report`'s statistics read them. Stand-in until the sweep engine
// hands out typed rows (issue 12 item 5): only this file then changes.
#include <cstdint>
#include <string>
#include <vector>

namespace nsv::cli {

struct Row {
  std::int64_t rows = 0, cols = 0;
  std::string spectrum, kernel, dtype, strategy;
  int seed = 0, steps = 0, tp = 0, axis = 0;
  double rd = 0, rd_max = 0, cosine = 0, ratio = 0;
  double bytes_sent = 0, bytes_received = 0, messages = 0, flops = 0, extra = 0, collectives = 0;
  bool bit = false;
  std::vector<double> ranks;
  std::string shape() const { return std::to_string(rows) + "x" + std::to_string(cols); }
};

std::vector<Row> parse_rows(const std::vector<std::vector<std::string>>& fields);

}  // namespace nsv::cli
