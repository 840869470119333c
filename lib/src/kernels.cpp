#include "nsv/kernels.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <string>

#include "nsv/config_schema.hpp"
#include "nsv/invalid_field.hpp"
#include "nsv/checked.hpp"

namespace nsv {

namespace {
constexpr NamedValue<Kernel> kKernelNames[] = {{Kernel::standard, "standard"}, {Kernel::gram, "gram"}};
constexpr NameTable<Kernel> kKernelTable{"kernel", kKernelNames};
constexpr NamedValue<Products> kProductsNames[] = {{Products::symmetric, "symmetric", "upper triangle, mirrored; fast"},
                                                   {Products::full, "full", "both triangles, PyTorch's bits"}};
constexpr NameTable<Products> kProductsTable{"products", kProductsNames};
}  // namespace

const NameTable<Kernel>& name_table(std::type_identity<Kernel>) { return kKernelTable; }
const NameTable<Products>& name_table(std::type_identity<Products>) { return kProductsTable; }

Kernel parse_kernel(std::string_view s) { return parse_named<Kernel>(s); }
std::string_view kernel_name(Kernel k) { return name_of(k); }
Products parse_products(std::string_view s) { return parse_named<Products>(s); }
std::string_view products_name(Products p) { return name_of(p); }

void NsConfig::validate() const {
  if (steps < 0 || steps > 1000)
    throw InvalidField("steps", "must be between 0 and 1000, got " + std::to_string(steps));
  if (coeffs.triples.empty()) throw InvalidField("coeffs", "must hold at least one (a, b, c) triple, got an empty schedule");
  if (!(eps >= 0.0)) throw InvalidField("eps", "must be >= 0, got " + std::to_string(eps));
  if (accumulate == Accumulate::compute && dtype == DType::fp64)
    throw InvalidField("accumulate", "compute is meaningful for bf16/fp16/fp32 only, not with dtype fp64");
  for (std::size_t i = 0; i < restart_at.size(); ++i) {
    if (restart_at[i] < 0 || restart_at[i] > 1000)
      throw InvalidField("restart_at", "every step must be between 0 and 1000, got " + restarts_text(restart_at));
    if (i > 0 && restart_at[i] <= restart_at[i - 1])
      throw InvalidField("restart_at", "the steps must be strictly increasing, got " + restarts_text(restart_at));
  }
}

bool NsConfig::restarts_before(int step) const {
  return step >= 1 && step < steps && std::binary_search(restart_at.begin(), restart_at.end(), step);
}

std::string restarts_text(const std::vector<int>& r) {
  if (r.empty()) return "none";
  std::string s;
  for (std::size_t i = 0; i < r.size(); ++i) s += (i ? "," : "") + std::to_string(r[i]);
  return s;
}

std::vector<int> parse_restarts(std::string_view s) {
  if (s == "none") return {};
  const auto bad = [&] {
    return std::invalid_argument("bad restart list '" + std::string(s) + "': expected steps separated by commas (2 or 2,4,6) or none");
  };
  std::vector<int> r;
  std::size_t at = 0;
  while (at <= s.size()) {
    const std::size_t comma = std::min(s.find(',', at), s.size());
    int v = 0;
    const auto [end, err] = std::from_chars(s.data() + at, s.data() + comma, v);
    if (err != std::errc() || end != s.data() + comma || comma == at) throw bad();
    r.push_back(v);
    at = comma + 1;
  }
  return r;
}

DType normalization_dtype(const NsConfig& cfg) {
  if (cfg.kernel == Kernel::standard) return cfg.dtype;
  return cfg.dtype == DType::fp64 ? DType::fp64 : DType::fp32;
}

// Exact: every product and sum is checked, and a count past 2^64 - 1 throws std::overflow_error
// (a wrapped count would rank strategies by garbage).
std::uint64_t ns_flops(const NsConfig& cfg, std::int64_t rows, std::int64_t cols) {
  if (rows < 0 || cols < 0)
    throw InvalidField("shape", "must have non-negative rows and cols, got " + std::to_string(rows) + "x" + std::to_string(cols));
  using detail::checked_add, detail::checked_mul;
  const std::string what = "the NS FLOP count of a " + std::to_string(rows) + "x" + std::to_string(cols) + " matrix";
  const auto mul = [&](std::uint64_t a, std::uint64_t b) { return checked_mul(a, b, what); };
  const auto add = [&](std::uint64_t a, std::uint64_t b) { return checked_add(a, b, what); };
  const auto p = static_cast<std::uint64_t>(std::min(rows, cols));
  const auto q = static_cast<std::uint64_t>(std::max(rows, cols));
  const auto steps = static_cast<std::uint64_t>(cfg.steps);
  const std::uint64_t pp2 = mul(2, mul(p, p));
  const std::uint64_t gram = mul(pp2, q), apply = gram, small = mul(pp2, p);
  if (cfg.kernel == Kernel::standard || p == q) return mul(steps, add(add(gram, small), apply));
  // Gram loop: one Gram at the start and one per restart, one application of Q per restart and
  // at the end; per step the polynomial (1 small product), Q's update (1, except on the first
  // step after a (re)start) and R's update (2, except before a restart and after the last step).
  if (cfg.steps == 0) return 0;
  std::uint64_t f = add(gram, apply);
  for (int i = 0; i < cfg.steps; ++i) {
    const bool fresh_q = i == 0 || cfg.restarts_before(i);
    if (cfg.restarts_before(i)) f = add(f, add(gram, apply));
    f = add(f, small);
    if (!fresh_q) f = add(f, small);
    if (i < cfg.steps - 1 && !cfg.restarts_before(i + 1)) f = add(f, mul(2, small));
  }
  return f;
}

}  // namespace nsv
