#pragma once
// Number formats of the audit's words and tables.
#include <cstdint>
#include <string>
#include <vector>

#include "nsv/strategy.hpp"

namespace nsv::render {

std::string printf_format(const char* format, double v);  // one %-conversion of v
std::string fmt_count(std::int64_t v);                    // 1,234,567
std::string fmt_bytes(double bytes);                      // B, KiB, MiB, GiB
std::string fmt_time(double seconds);                     // us, ms, s
std::string fmt_pct(double fraction);                     // 12.3%
std::string sizes_text(const std::vector<std::int64_t>&);  // runs compressed: [512 x4, 0 x4]
std::string ranks_text(const std::vector<int>&);           // runs compressed: 0,2-5
// The audit tables' column names (gram_ar, gram_restart_ar; narrower than strategy_name).
std::string audit_short_name(Strategy);

}  // namespace nsv::render
