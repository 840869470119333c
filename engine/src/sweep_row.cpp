#include "nsv/engine/sweep_row.hpp"

#include <charconv>
#include <cmath>
#include <concepts>
#include <cstdio>
#include <stdexcept>
#include <string_view>
#include <type_traits>

#include "nsv/config_schema.hpp"
#include "nsv/engine/csv.hpp"

namespace nsv::engine {
namespace {

// ---- the text of one field, by type --------------------------------------------------------

template <class T>
T parse_number(const std::string& s) {
  T v{};
  const auto [end, err] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (err != std::errc() || end != s.data() + s.size()) throw std::invalid_argument("not a number");
  return v;
}

std::string text(const std::string& v) { return v; }
void read(const std::string& s, std::string& v) { v = s; }

template <std::integral T>
std::string text(T v) {
  return std::to_string(v);
}
template <std::integral T>
void read(const std::string& s, T& v) {
  v = parse_number<T>(s);
}

std::string text(bool v) { return v ? "true" : "false"; }
void read(const std::string& s, bool& v) {
  if (s != "true" && s != "false") throw std::invalid_argument("expected true or false");
  v = s == "true";
}

// Reals to 9 significant digits: enough to tell apart every fp32 value.
std::string text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}
void read(const std::string& s, double& v) { v = parse_number<double>(s); }

// Per-rank values joined by ';', '-' for a rank holding nothing.
std::string text(const std::vector<std::optional<double>>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ";" : "") + (v[i] ? text(*v[i]) : std::string("-"));
  return out;
}
void read(const std::string& s, std::vector<std::optional<double>>& v) {
  v.clear();
  std::size_t at = 0;
  while (at <= s.size()) {
    const std::size_t semi = std::min(s.find(';', at), s.size());
    const std::string part = s.substr(at, semi - at);
    v.push_back(part == "-" ? std::nullopt : std::optional<double>(parse_number<double>(part)));
    at = semi + 1;
  }
}

// A restart list as the CLI writes it: 2, 2,4,6 or none (one CSV field, quoted where it holds a comma).
std::string text(const std::vector<int>& v) { return restarts_text(v); }
void read(const std::string& s, std::vector<int>& v) { v = parse_restarts(s); }

// Enums by the names of the configuration schema (what a user types, and the library prints).
template <class E>
  requires std::is_enum_v<E>
std::string text(E v) {
  return std::string(name_of(v));
}
template <class E>
  requires std::is_enum_v<E>
void read(const std::string& s, E& v) {
  v = parse_named<E>(s);
}

template <class T>
nlohmann::json json_value(const T& v) {
  if constexpr (std::is_same_v<T, double>) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(text(v));
  } else if constexpr (std::is_same_v<T, std::vector<std::optional<double>>>) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& x : v) a.push_back(x ? nlohmann::json(*x) : nlohmann::json(nullptr));
    return a;
  } else if constexpr (std::is_enum_v<T>) {
    return text(v);
  } else {
    return v;
  }
}

// ---- the column table ------------------------------------------------------------------------

struct Column {
  std::string_view name;
  bool key;  // part of the case key: identifies a case (--resume matches rows on these)
  std::string (*write)(const SweepRow&);
  void (*read)(SweepRow&, const std::string&);
  nlohmann::json (*json)(const SweepRow&);
};

template <auto Member>
constexpr Column column(std::string_view name, bool key) {
  return {name, key, [](const SweepRow& r) { return text(r.*Member); },
          [](SweepRow& r, const std::string& s) { read(s, r.*Member); },
          [](const SweepRow& r) { return json_value(r.*Member); }};
}

constexpr bool kKey = true, kResult = false;

// The wall time, to 0.1 ms (it varies from run to run anyway).
constexpr Column kSecondsColumn = {"seconds", kResult,
                                   [](const SweepRow& r) {
                                     char buf[32];
                                     std::snprintf(buf, sizeof buf, "%.4f", r.seconds);
                                     return std::string(buf);
                                   },
                                   [](SweepRow& r, const std::string& s) { r.seconds = parse_number<double>(s); },
                                   [](const SweepRow& r) { return nlohmann::json(r.seconds); }};

// In file order.
constexpr Column kColumns[] = {
    column<&SweepRow::rows>("rows", kKey),
    column<&SweepRow::cols>("cols", kKey),
    column<&SweepRow::spectrum>("spectrum", kKey),
    column<&SweepRow::seed>("seed", kKey),
    column<&SweepRow::kernel>("kernel", kKey),
    column<&SweepRow::dtype>("dtype", kKey),
    column<&SweepRow::accumulate>("accumulate", kKey),
    column<&SweepRow::products>("products", kKey),
    column<&SweepRow::steps>("steps", kKey),
    column<&SweepRow::coeffs>("coeffs", kKey),
    column<&SweepRow::restart_at>("restart_at", kKey),
    column<&SweepRow::tp>("tp", kKey),
    column<&SweepRow::axis>("axis", kKey),
    column<&SweepRow::grain>("grain", kKey),
    column<&SweepRow::heads>("heads", kKey),
    column<&SweepRow::kv_heads>("kv_heads", kKey),
    column<&SweepRow::fused>("fused", kKey),
    column<&SweepRow::strategy>("strategy", kKey),
    column<&SweepRow::target>("target", kKey),
    column<&SweepRow::reduction_order>("reduction_order", kKey),
    column<&SweepRow::rel_diff_mean>("rel_diff_mean", kResult),
    column<&SweepRow::rel_diff_max>("rel_diff_max", kResult),
    column<&SweepRow::rel_diff_ranks>("rel_diff_ranks", kResult),
    column<&SweepRow::cosine>("cosine", kResult),
    column<&SweepRow::norm_ratio>("norm_ratio", kResult),
    column<&SweepRow::bytes_sent>("bytes_sent", kResult),
    column<&SweepRow::bytes_received>("bytes_received", kResult),
    column<&SweepRow::messages>("messages", kResult),
    column<&SweepRow::flops>("flops", kResult),
    column<&SweepRow::extra_memory>("extra_memory", kResult),
    column<&SweepRow::collectives>("collectives", kResult),
    column<&SweepRow::bit_identical>("bit_identical", kResult),
    kSecondsColumn,
};

// Why a row's results cannot come from a run ("" when they can): one relative difference per
// rank, figures in their ranges (NaN allowed: a case whose outputs overflowed), and bit identity
// only with a zero difference.
std::string inconsistency(const SweepRow& r) {
  const auto nonnegative_or_nan = [](double v) { return std::isnan(v) || v >= 0; };
  if (r.rel_diff_ranks.size() != static_cast<std::size_t>(r.tp))
    return "rel_diff_ranks holds " + std::to_string(r.rel_diff_ranks.size()) + " values for tp " + std::to_string(r.tp);
  for (const auto& v : r.rel_diff_ranks)
    if (v && !nonnegative_or_nan(*v)) return "rel_diff_ranks holds a negative relative difference";
  if (!nonnegative_or_nan(r.rel_diff_mean) || !nonnegative_or_nan(r.rel_diff_max)) return "a relative difference is negative";
  if (r.rel_diff_max < r.rel_diff_mean) return "rel_diff_max is below rel_diff_mean";
  if (!std::isnan(r.cosine) && std::abs(r.cosine) > 1 + 1e-6) return "cosine is outside [-1, 1]";
  if (!nonnegative_or_nan(r.norm_ratio)) return "norm_ratio is negative";
  if (!(r.seconds >= 0) || !std::isfinite(r.seconds)) return "seconds is not a non-negative time";
  if (r.bit_identical && r.rel_diff_max != 0) return "bit_identical is true with a non-zero rel_diff_max";
  return "";
}

}  // namespace

const std::vector<std::string>& sweep_header() {
  static const std::vector<std::string> header = [] {
    std::vector<std::string> h;
    for (const Column& c : kColumns) h.emplace_back(c.name);
    return h;
  }();
  return header;
}

std::vector<std::string> encode_sweep_row(const SweepRow& row) {
  std::vector<std::string> fields;
  for (const Column& c : kColumns) fields.push_back(c.write(row));
  return fields;
}

SweepRow decode_sweep_row(const std::vector<std::string>& fields) {
  if (fields.size() != std::size(kColumns))
    throw std::invalid_argument("a sweep row has " + std::to_string(std::size(kColumns)) + " fields, got " +
                                std::to_string(fields.size()));
  SweepRow row;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    try {
      kColumns[i].read(row, fields[i]);
    } catch (const std::exception& e) {
      throw std::invalid_argument("column " + std::string(kColumns[i].name) + ": cannot read '" + fields[i] + "' (" +
                                  e.what() + ")");
    }
  }
  // Every field exactly as nsv writes it (a row of ours re-encodes to itself: "1.0" or "+3" were
  // edited in), and the results consistent with each other.
  const auto written = encode_sweep_row(row);
  for (std::size_t i = 0; i < fields.size(); ++i)
    if (written[i] != fields[i])
      throw std::invalid_argument("column " + std::string(kColumns[i].name) + ": '" + fields[i] +
                                  "' is not how nsv writes this value ('" + written[i] + "')");
  if (const std::string why = inconsistency(row); !why.empty()) throw std::invalid_argument(why);
  return row;
}

std::string sweep_field(const SweepRow& row, std::string_view column) {
  for (const Column& c : kColumns)
    if (c.name == column) return c.write(row);
  throw std::out_of_range("no sweep column '" + std::string(column) + "'");
}

std::string sweep_row_key(const SweepRow& row) {
  std::vector<std::string> fields;
  for (const Column& c : kColumns)
    if (c.key) fields.push_back(c.write(row));
  std::string key = csv_line(fields);
  key.pop_back();  // the newline
  return key;
}

nlohmann::json sweep_row_json(const SweepRow& row) {
  nlohmann::json j = nlohmann::json::object();
  for (const Column& c : kColumns) j[std::string(c.name)] = c.json(row);
  return j;
}

}  // namespace nsv::engine
