#include "cli_checks.hpp"

#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <string>

#include "nsv/kernels.hpp"

namespace nsv::cli {

CLI::Validator integer_in(std::int64_t lo, std::int64_t hi) {
  const std::string range = fmt::format("an integer between {} and {}", lo, hi);
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        std::int64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, v);
        if (ec != std::errc() || ptr != end || v < lo || v > hi) return "must be " + range + ", got '" + text + "'";
        return {};
      },
      fmt::format("INT in [{}, {}]", lo, hi));
}

CLI::Validator finite_in(double lo, double hi) {
  const std::string range = fmt::format("a finite number between {:g} and {:g}", lo, hi);
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        double v = 0;
        try {
          std::size_t used = 0;
          v = std::stod(text, &used);
          if (used != text.size()) return "must be " + range + ", got '" + text + "'";
        } catch (const std::exception&) {
          return "must be " + range + ", got '" + text + "'";
        }
        if (!std::isfinite(v) || v < lo || v > hi) return "must be " + range + ", got '" + text + "'";
        return {};
      },
      fmt::format("FLOAT in [{:g}, {:g}]", lo, hi));
}

CLI::Validator thread_count() { return integer_in(1, kMaxThreads); }

CLI::Validator restart_list() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::string want = "must be steps between 0 and 1000, increasing and separated by commas (2 or 2,4,6), or none, got '" + text + "'";
        try {
          NsConfig cfg;
          cfg.restart_at = parse_restarts(text);
          cfg.validate();
        } catch (const std::invalid_argument&) {
          return want;
        }
        return {};
      },
      "STEP[,STEP...]|none");
}

}  // namespace nsv::cli
