#include "tp_cases.hpp"

#include <algorithm>
#include <functional>
#include <sstream>

#include "nsv/config_schema.hpp"
#include "nsv/invalid_field.hpp"

#include "sharding/layout_generators.hpp"

namespace nsv::checks {

namespace shard = checks::shard;

MatD TpCase::matrix() const { return shard::gaussian(rows, cols, seed); }

std::string TpCase::describe() const {
  std::ostringstream s;
  s << rows << "x" << cols << " split on axis " << axis() << " by the " << rule << " rule";
  if (rule == "grain") s << " (grain " << grain << ")";
  if (head_dim > 0) s << " (heads " << heads << ", kv_heads " << kv_heads << ", head_dim " << head_dim << ")";
  s << ", tp " << layout.tp() << ", widths " << shard::sizes_text(layout.widths());
  if (dp) s << ", dp " << *dp << " (" << name_of(dp_partition) << " partition)";
  s << ", seed " << seed;
  return s.str();
}

TpCase TpCase::on_one_rank() const {
  TpCase whole = *this;
  whole.layout = contiguous_layout(axis(), {layout.dim});
  if (dp) whole.dp = 1;
  return whole;
}

namespace {

TpCase from_shard_case(const shard::ShardCase& c) {
  TpCase t;
  t.rows = c.rows;
  t.cols = c.cols;
  t.layout = c.layout();
  t.seed = c.seed;
  if (c.rule.kind == shard::SplitRule::Kind::grain) {
    t.rule = "grain";
    t.grain = c.rule.grain;
  } else {
    t.rule = "head_aligned";
    t.heads = t.kv_heads = c.rule.kv;
    if (c.axis == 0) t.head_dim = c.rows / c.rule.kv;
  }
  return t;
}

TpCase from_head_case(const shard::HeadCase& c) {
  TpCase t;
  t.rows = c.rows();
  t.cols = c.in;
  t.layout = c.layout();
  t.rule = c.query ? "gqa_q_proj" : "gqa_kv_proj";
  t.heads = c.heads();
  t.kv_heads = c.kv;
  t.head_dim = c.head_dim;
  t.seed = c.seed;
  return t;
}

// Any tp of the scope: its set, or 1..max_tp and sometimes more.
rc::Gen<int> tp_degrees_of(const TpScope& s) {
  return s.tps.empty() ? shard::tp_degrees(s.max_tp) : rc::gen::elementOf(s.tps);
}

// [Q; K; V] of kv KV heads, group query heads each, head_dim rows per head.
rc::Gen<TpCase> fused_cases(const TpScope& s) {
  return rc::gen::map(rc::gen::tuple(rc::gen::inRange<std::int64_t>(1, 5), rc::gen::inRange<std::int64_t>(1, 4),
                                     shard::head_dims(8), rc::gen::inRange<std::int64_t>(s.min_side, s.max_side + 1),
                                     tp_degrees_of(s), shard::matrix_seeds()),
                      [](const std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, std::uint64_t>& p) {
                        const auto [kv, group, hd, in, tp, seed] = p;
                        const std::int64_t q = kv * group * hd, k = kv * hd;
                        TpCase t;
                        t.layout = fused_layout(0, {head_aligned_sizes(q, kv, tp), head_aligned_sizes(k, kv, tp),
                                                    head_aligned_sizes(k, kv, tp)});
                        t.rows = t.layout.dim;
                        t.cols = in;
                        t.rule = "fused_qkv";
                        t.heads = kv * group;
                        t.kv_heads = kv;
                        t.head_dim = hd;
                        t.seed = seed;
                        return t;
                      });
}

// The caller's own layer: its shape, split along the scope's axis (or either), with AutoTP's rule
// for its heads (head-aligned by KV groups on dim 0) or the grain rule.
rc::Gen<TpCase> pinned_cases(const TpScope& s) {
  const auto [rows, cols] = *s.shape;
  const rc::Gen<int> axes = s.axis ? rc::gen::just(*s.axis) : shard::axes();
  return rc::gen::mapcat(rc::gen::tuple(axes, tp_degrees_of(s), shard::matrix_seeds()),
                         [s, rows, cols](const std::tuple<int, int, std::uint64_t>& p) {
                           const auto [axis, tp, seed] = p;
                           if (axis == 0 && s.heads > 0) {
                             const std::int64_t kv = s.kv_heads > 0 ? s.kv_heads : s.heads;
                             TpCase t;
                             t.rows = rows;
                             t.cols = cols;
                             t.layout = contiguous_layout(0, head_aligned_sizes(rows, kv, tp));
                             t.rule = kv == s.heads ? "head_aligned" : "gqa_q_proj";
                             t.heads = s.heads;
                             t.kv_heads = kv;
                             t.head_dim = rows / s.heads;
                             t.seed = seed;
                             return rc::gen::just(t);
                           }
                           const std::int64_t dim = axis == 0 ? rows : cols;
                           return rc::gen::map(shard::split_rules(dim, tp), [=](const shard::SplitRule& rule) {
                             return from_shard_case(shard::ShardCase{rows, cols, axis, rule, seed});
                           });
                         });
}

// Multiples of `unit` in [lo, hi] (the smallest one at least lo when none is at most hi).
rc::Gen<std::int64_t> multiples_of(std::int64_t unit, std::int64_t lo, std::int64_t hi) {
  const std::int64_t first = (lo + unit - 1) / unit, last = std::max(first, hi / unit);
  return rc::gen::map(rc::gen::inRange<std::int64_t>(first, last + 1), [unit](std::int64_t k) { return k * unit; });
}

// Even layouts, as trainings run them: tp divides the split dimension (grain 1, every rank the
// same width) and, on a mesh, dp divides each shard's rows (every FSDP row block and every ZeRO
// flat piece the same shape). Drawn as a branch of their own: among the other branches' draws
// they are rare, and a bug that shows only when all pieces look alike would go unseen.
rc::Gen<TpCase> even_cases(const TpScope& s) {
  const std::int64_t dp = s.dp.value_or(1);
  return rc::gen::mapcat(rc::gen::tuple(tp_degrees_of(s), shard::axes(), shard::matrix_seeds()),
                         [s, dp](const std::tuple<int, int, std::uint64_t>& p) {
                           const auto [tp, axis, seed] = p;
                           // a shard's rows are its width on axis 0, every row of the matrix on axis 1
                           const std::int64_t split_unit = tp * (axis == 0 ? dp : 1), other_unit = axis == 0 ? 1 : dp;
                           return rc::gen::map(rc::gen::tuple(multiples_of(split_unit, s.min_side, s.max_side),
                                                              multiples_of(other_unit, s.min_side, s.max_side)),
                                               [=](const std::tuple<std::int64_t, std::int64_t>& sides) {
                                                 const auto [split, other] = sides;
                                                 shard::SplitRule rule;
                                                 rule.dim = split;
                                                 rule.tp = tp;
                                                 return from_shard_case(shard::ShardCase{axis == 0 ? split : other,
                                                                                         axis == 0 ? other : split, axis,
                                                                                         rule, seed});
                                               });
                         });
}

bool equal_widths(const Layout& l) {
  const auto w = l.widths();
  return std::adjacent_find(w.begin(), w.end(), std::not_equal_to<>()) == w.end();
}

}  // namespace

void TpScope::validate() const {
  const auto between = [](std::int64_t lo, std::int64_t hi, std::int64_t v) {
    return "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " + std::to_string(v);
  };
  if (max_tp < 1 || max_tp > kMaxScopeTp) throw InvalidField("max_tp", between(1, kMaxScopeTp, max_tp));
  for (int tp : tps)
    if (tp < 1 || tp > kMaxScopeTp) throw InvalidField("tp", "must hold tp degrees: " + between(1, kMaxScopeTp, tp));
  if (axis && *axis != 0 && *axis != 1) throw InvalidField("axis", "must be 0 (rows) or 1 (columns), got " + std::to_string(*axis));
  if (max_side < kMinDrawnSide || max_side > kMaxDrawnSide) throw InvalidField("max_dim", between(kMinDrawnSide, kMaxDrawnSide, max_side));
  if (shape) {
    const auto [rows, cols] = *shape;
    if (rows < 1 || cols < 1 || rows > 65536 || cols > 65536 || rows * cols > (std::int64_t{1} << 24))
      throw InvalidField("shape", "must be two sides between 1 and 65536 with at most 2^24 elements, got " + std::to_string(rows) +
                                      "x" + std::to_string(cols));
    if (heads < 0 || kv_heads < 0 || (heads > 0 && rows % heads != 0))
      throw InvalidField("heads", "must divide the shape's rows (" + std::to_string(rows) + ") into whole heads, got " +
                                      std::to_string(heads));
    if (kv_heads > 0 && (heads == 0 || heads % kv_heads != 0))
      throw InvalidField("kv_heads", "must divide heads (" + std::to_string(heads) + "), got " + std::to_string(kv_heads));
  } else if (heads != 0 || kv_heads != 0) {
    throw InvalidField("heads", "applies with shape= only (the layer whose rows hold the heads)");
  }
  if (dp && (*dp < 1 || *dp > kMaxScopeTp)) throw InvalidField("dp", between(1, kMaxScopeTp, *dp));
  if (fused.value_or(false) && shape) throw InvalidField("fused", "draws fused [Q;K;V] layers of its own: it applies without shape=");
}

rc::Gen<TpCase> tp_cases(const TpScope& s) {
  rc::Gen<TpCase> any = [&s]() -> rc::Gen<TpCase> {
    if (s.shape) return pinned_cases(s);
    if (s.fused.value_or(false)) return fused_cases(s);
    auto plain = rc::gen::map(shard::shard_cases(tp_degrees_of(s), s.min_side, s.max_side), from_shard_case);
    auto heads = rc::gen::map(shard::head_cases(tp_degrees_of(s), s.max_side), from_head_case);
    return rc::gen::weightedOneOf<TpCase>({{4, plain}, {2, heads}, {1, fused_cases(s)}, {7, even_cases(s)}});
  }();
  if (s.dp)
    any = rc::gen::map(any, [s](TpCase t) {
      t.dp = s.dp;
      t.dp_partition = s.dp_partition;
      return t;
    });
  return rc::gen::suchThat(any, [s](const TpCase& t) {
    const bool sides = s.shape || (t.rows >= s.min_side && t.cols >= s.min_side && t.rows <= 4 * s.max_side);
    const auto widths = t.layout.widths();
    return sides && (!s.heads_on_rows || t.heads_on_rows()) && (!s.axis || t.axis() == *s.axis) &&
           (s.uneven || equal_widths(t.layout)) &&
           (s.zero_width || std::find(widths.begin(), widths.end(), 0) == widths.end()) &&
           (!s.fused || (t.rule == "fused_qkv") == *s.fused) &&
           (s.tps.empty() || std::find(s.tps.begin(), s.tps.end(), t.layout.tp()) != s.tps.end());
  });
}

}  // namespace nsv::checks
