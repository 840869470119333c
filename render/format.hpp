#pragma once
// Number formats of the audit's words and tables.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "nsv/strategy.hpp"

namespace nsv::render {

// printf into a string (the tables' fixed-width columns keep printf's exact spelling).
template <class... Args>
std::string printf_format(const char* format, const Args&... args) {
  char b[512];
  std::snprintf(b, sizeof b, format, args...);
  return b;
}
std::string fmt_count(std::int64_t v);                    // 1,234,567
std::string fmt_bytes(double bytes);                      // B, KiB, MiB, GiB
std::string fmt_time(double seconds);                     // us, ms, s
std::string fmt_pct(double fraction);                     // 12.3%
std::string sizes_text(const std::vector<std::int64_t>&);  // runs compressed: [512 x4, 0 x4]
std::string ranks_text(const std::vector<int>&);           // runs compressed: 0,2-5
// The audit tables' column names (gram_ar, gram_restart_ar; narrower than strategy_name).
std::string audit_short_name(Strategy);

}  // namespace nsv::render
