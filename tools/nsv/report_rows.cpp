#include "report_rows.hpp"

#include <cmath>
#include <sstream>

#include "sweep_engine.hpp"

namespace nsv::cli {

std::vector<Row> parse_rows(const std::vector<std::vector<std::string>>& fields) {
  std::vector<Row> out;
  for (const auto& f : fields) {
    Row r;
    r.rows = static_cast<std::int64_t>(number(f, "rows"));
    r.cols = static_cast<std::int64_t>(number(f, "cols"));
    r.spectrum = field(f, "spectrum");
    r.kernel = field(f, "kernel");
    r.dtype = field(f, "dtype");
    r.strategy = field(f, "strategy");
    r.seed = static_cast<int>(number(f, "seed"));
    r.steps = static_cast<int>(number(f, "steps"));
    r.tp = static_cast<int>(number(f, "tp"));
    r.axis = static_cast<int>(number(f, "axis"));
    r.rd = number(f, "rel_diff_mean");
    r.rd_max = number(f, "rel_diff_max");
    r.cosine = number(f, "cosine");
    r.ratio = number(f, "norm_ratio");
    r.bytes_sent = number(f, "bytes_sent");
    r.bytes_received = number(f, "bytes_received");
    r.messages = number(f, "messages");
    r.flops = number(f, "flops");
    r.extra = number(f, "extra_memory");
    r.collectives = number(f, "collectives");
    r.bit = field(f, "bit_identical") == "true";
    std::stringstream ss(field(f, "rel_diff_ranks"));
    std::string part;
    while (std::getline(ss, part, ';')) r.ranks.push_back(part == "-" ? NAN : std::stod(part));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace nsv::cli
