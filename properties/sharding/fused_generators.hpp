#pragma once
// RapidCheck generators for AutoTP's fused layouts (nsv::autotp_fused_layout) and routed experts:
// a fused [Q;K;V] projection of any kind with any head structure, or a fused [gate; up], cut at
// any TP degree and grain; every choice an rc::gen draw, so every case shrinks and replays.
#include <rapidcheck.h>

#include <cstdint>
#include <ostream>
#include <vector>

#include "sharding/layout_generators.hpp"
#include "nsv/layout.hpp"
#include "nsv/model.hpp"

namespace nsv::checks::shard {

struct FusedCase {
  FusedKind kind = FusedKind::glm;
  std::int64_t heads = 1, kv = 1, head_dim = 1;  // query heads, KV heads (qkv kinds)
  std::int64_t half = 1;                          // gate_up: rows of each half
  std::int64_t in = 1;
  int tp = 1;
  std::int64_t grain = 1;
  std::uint64_t seed = 0;

  bool qkv() const { return kind != FusedKind::gate_up; }
  std::int64_t rows() const { return qkv() ? (heads + 2 * kv) * head_dim : 2 * half; }
  FusedGeometry geometry() const { return fused_geometry(kind, rows(), qkv() ? heads : 0, qkv() ? kv : 0); }
  Layout layout() const { return autotp_fused_layout(kind, geometry().part_rows, tp, geometry().autotp_kv_heads, grain); }
  MatD matrix() const { return gaussian(rows(), in, seed); }
};

inline void showValue(const FusedCase& c, std::ostream& os) {
  os << fused_kind_name(c.kind) << " ";
  if (c.qkv())
    os << "H=" << c.heads << " KV=" << c.kv << " head_dim=" << c.head_dim;
  else
    os << "2 x " << c.half << " rows";
  os << " in=" << c.in << " tp=" << c.tp << " grain=" << c.grain << ", seed " << c.seed;
  try {
    os << " -> " << layout_text(c.layout());
  } catch (const std::exception& e) {
    os << " -> throws: " << e.what();
  }
}

inline rc::Gen<FusedKind> qkv_kinds(std::vector<FusedKind> kinds = {FusedKind::glm, FusedKind::phi3, FusedKind::bloom,
                                                                    FusedKind::bigcode}) {
  return rc::gen::elementOf(kinds);
}

// A fused case of one of `kinds` (gate_up included when listed): GQA head structures for glm and
// phi3 (glm as Qwen/ChatGLM use it with any KV count), one KV head for bigcode, any for bloom.
inline rc::Gen<FusedCase> fused_cases(std::vector<FusedKind> kinds = {FusedKind::glm, FusedKind::phi3, FusedKind::bloom,
                                                                      FusedKind::bigcode, FusedKind::gate_up},
                                      rc::Gen<int> tps = tp_degrees(), std::int64_t max_in = max_dim()) {
  return rc::gen::exec([kinds, tps, max_in] {
    FusedCase c;
    c.kind = *rc::gen::elementOf(kinds);
    c.kv = c.kind == FusedKind::bigcode ? 1 : *rc::gen::inRange<std::int64_t>(1, 5);
    c.heads = c.kv * *rc::gen::inRange<std::int64_t>(1, 5);
    c.head_dim = *head_dims(8);
    c.half = *rc::gen::inRange<std::int64_t>(1, 33);
    c.in = *rc::gen::inRange<std::int64_t>(1, max_in + 1);
    c.tp = *tps;
    c.grain = *rc::gen::weightedOneOf<std::int64_t>({{3, rc::gen::just<std::int64_t>(1)}, {1, rc::gen::inRange<std::int64_t>(1, 9)}});
    c.seed = *matrix_seeds();
    return c;
  });
}

}  // namespace nsv::checks::shard
