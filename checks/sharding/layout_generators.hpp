#pragma once
// RapidCheck generators for tensor-parallel layouts (SPEC §2.2) and the cases the sharding
// properties draw. Every random choice is an rc::gen draw, so every case shrinks (towards tp 1,
// small dimensions, grain 1, seed 0) and replays from RapidCheck's seed.
//
// Matrices are built by nsv::make_matrix from a seed drawn here (the values themselves are not
// what these properties vary; the shapes, TP degrees, split rules and axes are), which keeps
// 100 cases of 48 x 48 matrices fast and the counterexample short: a shape, a layout and a seed.
#include <rapidcheck.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "generators/shapes.hpp"
#include "generators/tiers.hpp"
#include "nsv/layout.hpp"
#include "nsv/spectra.hpp"
#include "sharding_support.hpp"

namespace nsv::checks::shard {

// A seed for nsv::make_matrix (Gaussian values rounded to float32).
inline rc::Gen<std::uint64_t> matrix_seeds() { return rc::gen::inRange<std::uint64_t>(0, std::uint64_t{1} << 40); }

inline MatD gaussian(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  return make_matrix(nsv::Spectrum{}, rows, cols, seed);
}

// TP degrees: the real ones (1..8) mostly, and sometimes more ranks than anything can fill
// (zero-width ranks under either rule).
inline rc::Gen<int> tp_degrees(int max_tp = 8) {
  return rc::gen::weightedOneOf<int>({{6, rc::gen::inRange(1, max_tp + 1)}, {1, rc::gen::inRange(max_tp + 1, 2 * max_tp + 1)}});
}
inline rc::Gen<int> parallel_tp_degrees(int max_tp = 8) { return rc::gen::inRange(2, max_tp + 1); }
inline rc::Gen<int> axes() { return rc::gen::inRange(0, 2); }

// --------------------------------------------------------------------------------------------
// How a split axis of length `dim` is cut: the grain rule (with grain 1, 64 or any), or the
// head-aligned rule with `kv` groups dividing dim.
struct SplitRule {
  enum class Kind { grain, head_aligned } kind = Kind::grain;
  std::int64_t dim = 1;
  int tp = 1;
  std::int64_t grain = 1;  // grain rule
  std::int64_t kv = 1;     // head-aligned rule: KV groups (divides dim)

  std::vector<std::int64_t> sizes() const {
    return kind == Kind::grain ? grain_sizes(dim, tp, grain) : head_aligned_sizes(dim, kv, tp);
  }
};

inline void showValue(const SplitRule& r, std::ostream& os) {
  if (r.kind == SplitRule::Kind::grain)
    os << "grain rule: dim " << r.dim << " tp " << r.tp << " grain " << r.grain;
  else
    os << "head-aligned rule: dim " << r.dim << " kv " << r.kv << " tp " << r.tp;
  try {
    os << " -> " << sizes_text(r.sizes());
  } catch (const std::exception& e) {
    os << " -> throws: " << e.what();
  }
}

inline std::vector<std::int64_t> divisors_up_to(std::int64_t n, std::int64_t cap) {
  std::vector<std::int64_t> d;
  for (std::int64_t k = 1; k <= std::min(n, cap); ++k)
    if (n % k == 0) d.push_back(k);
  return d;
}

// A grain: 1 (training), 64 (inference), or any positive length up to dim + 1 (so a grain larger
// than the dimension, where everything is remainder on the last rank, occurs too).
inline rc::Gen<std::int64_t> grains(std::int64_t dim) {
  return rc::gen::weightedOneOf<std::int64_t>({{3, rc::gen::just<std::int64_t>(1)},
                                               {2, rc::gen::just<std::int64_t>(64)},
                                               {2, rc::gen::inRange<std::int64_t>(1, dim + 2)}});
}

// Any split rule of a given dimension and TP degree.
inline rc::Gen<SplitRule> split_rules(std::int64_t dim, int tp) {
  auto grain_rule = rc::gen::map(grains(dim), [dim, tp](std::int64_t g) {
    SplitRule r;
    r.kind = SplitRule::Kind::grain;
    r.dim = dim;
    r.tp = tp;
    r.grain = g;
    return r;
  });
  auto head_rule = rc::gen::map(rc::gen::elementOf(divisors_up_to(dim, 16)), [dim, tp](std::int64_t kv) {
    SplitRule r;
    r.kind = SplitRule::Kind::head_aligned;
    r.dim = dim;
    r.tp = tp;
    r.kv = kv;
    return r;
  });
  return rc::gen::weightedOneOf<SplitRule>({{1, grain_rule}, {1, head_rule}});
}

// --------------------------------------------------------------------------------------------
// A matrix to shard: its shape, the axis it is split on, how, and the seed of its values.
struct ShardCase {
  std::int64_t rows = 1, cols = 1;
  int axis = 0;
  SplitRule rule;
  std::uint64_t seed = 0;

  int tp() const { return rule.tp; }
  Layout layout() const { return contiguous_layout(axis, rule.sizes()); }
  MatD matrix() const { return gaussian(rows, cols, seed); }
};

inline void showValue(const ShardCase& c, std::ostream& os) {
  os << c.rows << "x" << c.cols << " split on axis " << c.axis << ", ";
  showValue(c.rule, os);
  os << ", seed " << c.seed;
}

// Shapes in [min_dim, max_dim]^2, any TP degree `tps`, either axis, any split rule.
inline rc::Gen<ShardCase> shard_cases(rc::Gen<int> tps = tp_degrees(), std::int64_t min_dim = 1,
                                      std::int64_t max_dim_ = max_dim()) {
  return rc::gen::mapcat(
      rc::gen::tuple(rc::gen::inRange<std::int64_t>(min_dim, max_dim_ + 1), rc::gen::inRange<std::int64_t>(min_dim, max_dim_ + 1),
                     axes(), tps, matrix_seeds()),
      [](const std::tuple<std::int64_t, std::int64_t, int, int, std::uint64_t>& t) {
        const auto [rows, cols, axis, tp, seed] = t;
        const std::int64_t dim = axis == 0 ? rows : cols;
        return rc::gen::map(split_rules(dim, tp), [=](const SplitRule& rule) {
          return ShardCase{rows, cols, axis, rule, seed};
        });
      });
}

// --------------------------------------------------------------------------------------------
// An attention projection with heads on dim 0: q_proj [H*hd, in] (split by its KV groups: the
// query heads of a KV group stay together, GQA) or k/v_proj [KV*hd, in].
struct HeadCase {
  std::int64_t kv = 1;          // KV heads
  std::int64_t group = 1;       // query heads per KV head (H = kv * group)
  std::int64_t head_dim = 1;
  std::int64_t in = 1;
  int tp = 1;
  bool query = true;            // q_proj (H heads) or k/v_proj (kv heads)
  std::uint64_t seed = 0;

  std::int64_t heads() const { return query ? kv * group : kv; }
  std::int64_t rows() const { return heads() * head_dim; }
  std::vector<std::int64_t> sizes() const { return head_aligned_sizes(rows(), kv, tp); }
  Layout layout() const { return contiguous_layout(0, sizes()); }
  MatD matrix() const { return gaussian(rows(), in, seed); }
};

inline void showValue(const HeadCase& c, std::ostream& os) {
  os << (c.query ? "q_proj" : "k/v_proj") << " H=" << c.heads() << " KV=" << c.kv << " head_dim=" << c.head_dim
     << " in=" << c.in << " tp=" << c.tp << " -> rows " << c.rows() << " split " << sizes_text(c.sizes()) << ", seed "
     << c.seed;
}

// Head dims: powers of two (real models) or any small length.
inline rc::Gen<std::int64_t> head_dims(std::int64_t max_hd = 16) {
  std::vector<std::int64_t> pow2;
  for (std::int64_t p = 1; p <= max_hd; p *= 2) pow2.push_back(p);
  return rc::gen::weightedOneOf<std::int64_t>({{2, rc::gen::elementOf(pow2)}, {1, rc::gen::inRange<std::int64_t>(1, max_hd + 1)}});
}

inline rc::Gen<HeadCase> head_cases(rc::Gen<int> tps = tp_degrees(), std::int64_t max_in = max_dim()) {
  return rc::gen::map(rc::gen::tuple(rc::gen::inRange<std::int64_t>(1, 9), rc::gen::inRange<std::int64_t>(1, 5), head_dims(),
                                     rc::gen::inRange<std::int64_t>(1, max_in + 1), tps, rc::gen::arbitrary<bool>(), matrix_seeds()),
                      [](const std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, bool, std::uint64_t>& t) {
                        const auto [kv, group, hd, in, tp, query, seed] = t;
                        return HeadCase{kv, group, hd, in, tp, query, seed};
                      });
}

}  // namespace nsv::checks::shard
