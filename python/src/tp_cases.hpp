#pragma once
// The layouts check_tp draws (the sharding properties' generators: any tp, both axes, the grain
// rule with grain 1, 64 or any, head-aligned shards with GQA, uneven and zero-width ranks, fused
// QKV), the spec the user's function receives, and the semantics a TP result can have.
#include <rapidcheck.h>

#include <pybind11/pybind11.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "nsv/kernels.hpp"
#include "nsv/layout.hpp"

namespace nsv::python {

struct TpCase {
  std::int64_t rows = 1, cols = 1;
  Layout layout;
  std::string rule;  // "grain", "head_aligned", "gqa_q_proj", "gqa_kv_proj", "fused_qkv"
  std::int64_t heads = 0, kv_heads = 0, head_dim = 0;  // head_dim > 0: whole heads of head_dim rows along dim 0
  std::int64_t grain = 1;
  std::uint64_t seed = 0;

  int axis() const { return layout.axis; }
  MatD matrix() const;
  std::string describe() const;
};
// How RapidCheck prints a case in a counterexample.
inline void showValue(const TpCase& t, std::ostream& os) { os << t.describe(); }

// min_side: the smallest side drawn (8 where a rounding bound is claimed, as S5 claims it);
// heads_on_rows: only cases with whole heads along dim 0 (the per_head target).
rc::Gen<TpCase> tp_cases(int max_tp, std::int64_t min_side, std::int64_t max_side, bool heads_on_rows);

// The `spec` argument of the user's function: a types.SimpleNamespace (GIL held).
pybind11::object spec_of(const TpCase&, const NsConfig&);

// What a TP result can compute: the NS of the whole matrix (its blocks), of each shard, or of each
// head; times no aspect scale, Muon's sqrt(max(1, rows/cols)) of the whole matrix's shape, or of
// the shard's.
enum class Semantics { whole, per_shard, per_head };
enum class AspectScale { none, global, local };
std::string semantics_words(Semantics, AspectScale);

// Rank r's block of that result, for every rank.
std::vector<MatD> candidate_blocks(const TpCase&, const MatD& g, Semantics, AspectScale, const NsConfig&);
double aspect_scale(std::int64_t rows, std::int64_t cols);

}  // namespace nsv::python
