#include "nsv/config_schema.hpp"

#include <stdexcept>

#include "nsv/coeffs.hpp"
#include "nsv/input_limits.hpp"

namespace nsv {

namespace detail {

void refuse_name(std::string_view field, std::string_view text, const std::vector<std::string>& choices) {
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  throw InvalidField(std::string(field), "must be one of " + list + "; got '" + std::string(text) + "'");
}

void unnamed_value(std::string_view field) { throw std::logic_error("a " + std::string(field) + " value without a name"); }

}  // namespace detail

namespace {
constexpr NamedValue<BackendChoice> kBackendNames[] = {
    {BackendChoice::cpu, "cpu"},
    {BackendChoice::cuda, "cuda"},
    {BackendChoice::cuda_tf32, "cuda-tf32", "TF32 GEMMs"},
    {BackendChoice::cuda_batched, "cuda-batched", "strided-batched GEMMs"},
};
constexpr NameTable<BackendChoice> kBackendTable{"backend", kBackendNames};
}  // namespace

const NameTable<BackendChoice>& name_table(std::type_identity<BackendChoice>) { return kBackendTable; }

std::pair<std::int64_t, std::int64_t> parse_shape(std::string_view text) {
  const std::string s(text);
  const auto x = s.find('x');
  const auto bad = [&] { return std::invalid_argument("bad shape '" + s + "': expected ROWSxCOLS, e.g. 512x1024"); };
  if (x == std::string::npos) throw bad();
  try {
    std::size_t a = 0, b = 0;
    const std::int64_t r = std::stoll(s.substr(0, x), &a), c = std::stoll(s.substr(x + 1), &b);
    if (a != x || b != s.size() - x - 1 || r < 1 || c < 1 || r > kMaxShapeSide || c > kMaxShapeSide) throw bad();
    return {r, c};
  } catch (const std::logic_error&) {
    throw bad();
  }
}

NsConfigNames ns_config_names(const NsConfig& c) {
  return {std::string(name_of(c.kernel)),     c.steps,        std::string(name_of(c.dtype)),
          std::string(name_of(c.accumulate)), std::string(name_of(c.products)), c.coeffs.name,
          restarts_text(c.restart_at)};
}

NsConfig ns_config_from_names(const NsConfigNames& n) {
  NsConfig cfg;
  cfg.kernel = parse_named<Kernel>(n.kernel);
  cfg.steps = n.steps;
  cfg.dtype = parse_named<DType>(n.dtype);
  cfg.accumulate = parse_named<Accumulate>(n.accumulate);
  cfg.products = parse_named<Products>(n.products);
  cfg.coeffs = resolve_schedule(n.coeffs);
  cfg.restart_at = parse_restarts(n.restart_at);
  cfg.validate();
  return cfg;
}

std::vector<FieldSchema> config_schema() {
  const NsConfigNames d = ns_config_names();
  const auto named = [](std::string default_name, auto table) -> FieldSchema {
    using E = typename decltype(table)::type;
    return {std::string(names_of<E>().field), default_name.empty() ? nlohmann::json() : nlohmann::json(default_name),
            choices_of<E>()};
  };
  return {
      named(d.kernel, std::type_identity<Kernel>{}),
      {"steps", d.steps, {}},
      named(d.dtype, std::type_identity<DType>{}),
      named(d.accumulate, std::type_identity<Accumulate>{}),
      named(d.products, std::type_identity<Products>{}),
      {"coeffs", d.coeffs, builtin_schedule_names()},
      {"restart_at", d.restart_at, {}},
      named(std::string(name_of(kDefaultBackend)), std::type_identity<BackendChoice>{}),
      named(std::string(name_of(StrategyOptions{}.order)), std::type_identity<ReductionOrder>{}),
      named(std::string(name_of(FusedKind::none)), std::type_identity<FusedKind>{}),
      named("", std::type_identity<Strategy>{}),  // the front end's choice (nsv: shard, today's AutoTP)
      named("", std::type_identity<Target>{}),    // the strategy's own semantics
      named(std::string(name_of(DpPartition::zero)), std::type_identity<DpPartition>{}),
  };
}

}  // namespace nsv
