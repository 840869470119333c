#include "format.hpp"

namespace nsv::render {

std::string fmt_count(std::int64_t v) {
  std::string s = std::to_string(v), out;
  int k = 0;
  for (auto it = s.rbegin(); it != s.rend(); ++it) {
    if (k && k % 3 == 0 && *it != '-') out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++k;
  }
  return out;
}

std::string fmt_bytes(double b) {
  if (b < 1024) return printf_format("%.0f B", b);
  if (b < 1024.0 * 1024) return printf_format("%.1f KiB", b / 1024);
  if (b < 1024.0 * 1024 * 1024) return printf_format("%.1f MiB", b / (1024.0 * 1024));
  return printf_format("%.2f GiB", b / (1024.0 * 1024 * 1024));
}

std::string fmt_time(double s) {
  if (s == 0) return "0";
  if (s < 1e-3) return printf_format("%.1f us", s * 1e6);
  if (s < 1) return printf_format("%.3f ms", s * 1e3);
  return printf_format("%.3f s", s);
}

std::string fmt_pct(double f) { return printf_format("%.1f%%", f * 100); }

std::string sizes_text(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j < v.size() && v[j] == v[i]) ++j;
    if (i) s += ", ";
    s += std::to_string(v[i]);
    if (j - i > 1) s += " x" + std::to_string(j - i);
    i = j;
  }
  return s + "]";
}

std::string ranks_text(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += std::to_string(v[i]);
    if (j > i) {
      s += '-';
      s += std::to_string(v[j]);
    }
    i = j + 1;
  }
  return s;
}

std::string audit_short_name(Strategy s) {
  switch (s) {
    case Strategy::gram_allreduce: return "gram_ar";
    case Strategy::gram_restart_allreduce: return "gram_restart_ar";
    default: return std::string(strategy_name(s));
  }
}

}  // namespace nsv::render
