#include "nsv/strategy.hpp"

#include <array>
#include <string>

#include "nsv/config_schema.hpp"

namespace nsv {
namespace {

constexpr Collective kGather[] = {Collective::all_gather};
constexpr Collective kAllReduce[] = {Collective::all_reduce};
constexpr Collective kAllToAll[] = {Collective::all_to_all};

// SPEC §3. The order is kAllStrategies'.
constexpr StrategyRecord kRecords[] = {
    {.strategy = Strategy::shard,
     .name = "shard",
     .short_name = "shard",
     .target = Target::whole,
     .promise = Promise::none,
     .operand = Operand::own_shard,
     .collectives = {},
     .summary = "each rank orthogonalizes its own shard (DeepSpeed AutoTP today)"},
    {.strategy = Strategy::gather,
     .name = "gather",
     .short_name = "gather",
     .target = Target::whole,
     .promise = Promise::bit_identical,
     .operand = Operand::gathered_matrix,
     .collectives = kGather,
     .summary = "all-gather the matrix, every rank orthogonalizes it and keeps its block"},
    {.strategy = Strategy::per_head,
     .name = "per_head",
     .short_name = "per_head",
     .target = Target::per_head,
     .promise = Promise::bit_identical,
     .operand = Operand::own_heads,
     .collectives = {},
     .summary = "each rank orthogonalizes every head block of its head-aligned shard"},
    {.strategy = Strategy::gram_allreduce,
     .name = "gram_allreduce",
     .short_name = "gram_ar",
     .target = Target::whole,
     .promise = Promise::exact_arithmetic,
     .operand = Operand::sharded_frame,
     .iteration = Iteration::standard,
     .collectives = kAllReduce,
     .summary = "the standard loop on the shards, the Gram matrix all-reduced every step"},
    {.strategy = Strategy::gram_restart_allreduce,
     .name = "gram_restart_allreduce",
     .short_name = "gram_restart",
     .target = Target::whole,
     .promise = Promise::exact_arithmetic,
     .operand = Operand::sharded_frame,
     .iteration = Iteration::gram,
     .collectives = kAllReduce,
     .summary = "the Gram loop on the shards, the Gram matrix all-reduced at the start and each restart"},
    {.strategy = Strategy::owner,
     .name = "owner",
     .short_name = "owner",
     .target = Target::whole,
     .promise = Promise::bit_identical,
     .operand = Operand::owner_matrix,
     .collectives = kAllToAll,
     .summary = "one rank receives the matrix, orthogonalizes it and sends each rank its block back"},
};

static_assert(std::size(kRecords) == std::size(kAllStrategies));
constexpr bool records_in_enum_order() {
  for (std::size_t i = 0; i < std::size(kRecords); ++i)
    if (kRecords[i].strategy != kAllStrategies[i] || static_cast<std::size_t>(kAllStrategies[i]) != i) return false;
  return true;
}
static_assert(records_in_enum_order(), "kRecords[i] must describe kAllStrategies[i], the enum's i-th value");

int nonempty_ranks(const Layout& layout) {
  int n = 0;
  for (int r = 0; r < layout.tp(); ++r) n += layout.width(r) > 0 ? 1 : 0;
  return n;
}

std::string per_head_inapplicable_reason(const Layout& layout, std::int64_t head_dim) {
  if (layout.axis != 0)
    return "per_head applies to dim-0 (column-parallel) splits only: a dim-1 (row-parallel) split cuts the "
           "input axis, which per-head NS does not batch over (o_proj, down_proj). Use gather, owner or "
           "gram_allreduce for this matrix.";
  if (head_dim < 1) return "per_head needs the head dimension of a matrix with heads on dim 0 (head_dim = 0)";
  for (int r = 0; r < layout.tp(); ++r) {
    if (layout.width(r) % head_dim != 0)
      return "per_head: rank " + std::to_string(r) + " holds " + std::to_string(layout.width(r)) +
             " rows, not a whole number of heads of " + std::to_string(head_dim) + " rows; the shards must be head-aligned";
    // A fused layout's pieces must each start on a head boundary, or a rank's head blocks
    // straddle two heads of the whole matrix although its width is a multiple of head_dim.
    for (const auto& piece : layout.ranks[static_cast<std::size_t>(r)])
      if (piece.begin % head_dim != 0 || piece.size() % head_dim != 0)
        return "per_head: rank " + std::to_string(r) + " holds rows [" + std::to_string(piece.begin) + ", " +
               std::to_string(piece.end) + "), which do not start and end on heads of " + std::to_string(head_dim) + " rows";
  }
  return {};
}

}  // namespace

std::span<const StrategyRecord> strategy_records() { return kRecords; }
const StrategyRecord& strategy_record(Strategy s) { return kRecords[static_cast<std::size_t>(s)]; }

namespace {
// The names as the schema's table: kRecords' names, in their order.
constexpr auto kStrategyNames = [] {
  std::array<NamedValue<Strategy>, std::size(kRecords)> names{};
  for (std::size_t i = 0; i < names.size(); ++i) names[i] = {kRecords[i].strategy, kRecords[i].name};
  return names;
}();
constexpr NameTable<Strategy> kStrategyTable{"strategy", kStrategyNames};
constexpr NamedValue<Target> kTargetNames[] = {{Target::whole, "whole"}, {Target::per_head, "per_head"}};
constexpr NameTable<Target> kTargetTable{"target", kTargetNames};
}  // namespace

const NameTable<Strategy>& name_table(std::type_identity<Strategy>) { return kStrategyTable; }
const NameTable<Target>& name_table(std::type_identity<Target>) { return kTargetTable; }

std::string strategy_names(std::string_view separator) { return choices_text<Strategy>(separator); }
Strategy parse_strategy(std::string_view s) { return parse_named<Strategy>(s); }
std::string_view strategy_name(Strategy s) { return name_of(s); }
Target parse_target(std::string_view s) { return parse_named<Target>(s); }
std::string_view target_name(Target t) { return name_of(t); }

std::string_view promise_name(Promise p) {
  switch (p) {
    case Promise::bit_identical: return "bit_identical";
    case Promise::exact_arithmetic: return "exact_in_exact_arithmetic";
    case Promise::none: return "inexact";
  }
  return "?";
}

Target natural_target(Strategy s) { return strategy_record(s).target; }
Promise promise_of(Strategy s) { return strategy_record(s).promise; }

Promise promise_on(Strategy s, const Layout& layout) {
  const StrategyRecord& r = strategy_record(s);
  switch (r.operand) {
    case Operand::own_shard:
      return nonempty_ranks(layout) <= 1 || layout.fully_replicated() ? Promise::bit_identical : r.promise;
    case Operand::sharded_frame: return layout.tp() == 1 ? Promise::bit_identical : r.promise;
    default: return r.promise;
  }
}

std::string inapplicable_reason(Strategy s, const Layout& layout, std::int64_t head_dim) {
  switch (strategy_record(s).operand) {
    case Operand::own_heads: return per_head_inapplicable_reason(layout, head_dim);
    case Operand::sharded_frame:
      // The all-reduced Gram sums every rank's shard: rows every rank holds would count tp times.
      if (layout.has_replicas() && layout.tp() > 1)
        return std::string(strategy_record(s).name) +
               " needs every row or column on exactly one rank: this layout replicates some on every rank, which "
               "the all-reduced Gram matrix would count once per rank. Use gather or owner for this matrix.";
      return {};
    default: return {};
  }
}

}  // namespace nsv
