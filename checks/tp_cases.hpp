#pragma once
// The layouts a TP implementation is checked on (the sharding properties' generators: any tp,
// both axes, the grain rule with grain 1, 64 or any, head-aligned shards with GQA, uneven and
// zero-width ranks, fused QKV; and, half of the draws, even layouts: equal shards and, on a mesh,
// equal pieces), drawn within a scope the caller sets.
#include "drawn_sides.hpp"
#include <rapidcheck.h>

#include <cstdint>
#include <ostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nsv/layout.hpp"
#include "nsv/mesh.hpp"
#include "nsv/matrix.hpp"

namespace nsv::checks {

struct TpCase {
  std::int64_t rows = 1, cols = 1;
  Layout layout;
  std::string rule;  // "grain", "head_aligned", "gqa_q_proj", "gqa_kv_proj", "fused_qkv"
  std::int64_t heads = 0, kv_heads = 0, head_dim = 0;  // head_dim > 0: whole heads of head_dim rows along dim 0
  std::int64_t grain = 1;
  std::uint64_t seed = 0;
  // A TP x DP mesh: every TP shard partitioned again over dp ranks (mesh.hpp), and the
  // implementation handed one piece per mesh rank. Absent: the TP shards themselves.
  std::optional<int> dp;
  DpPartition dp_partition = DpPartition::zero;

  int axis() const { return layout.axis; }
  MeshLayout mesh() const { return mesh_layout(layout, rows, cols, dp.value_or(1), dp_partition); }
  bool heads_on_rows() const { return head_dim > 0 && axis() == 0; }
  MatD matrix() const;
  std::string describe() const;
  // The same matrix with every row and column on one rank (tp = 1, and dp = 1 on a mesh).
  TpCase on_one_rank() const;
};
// How RapidCheck prints a case in a counterexample.
inline void showValue(const TpCase& t, std::ostream& os) { os << t.describe(); }

// Which layouts to draw: by default every rule, tp and axis; narrowed to the caller's own layouts
// by the optional fields (nsverify.check_tp's scoping arguments).
// The scope's limits, read by TpScope::validate and the check records (check_record.cpp).
inline constexpr int kMaxScopeTp = 64;  // the TP degrees (and, on a mesh, the DP degrees) a check draws

struct TpScope {
  int max_tp = 8;              // tp 1..max_tp, and sometimes more ranks than rows (zero-width ranks)
  std::vector<int> tps;        // only these tp degrees (empty: as max_tp says)
  std::optional<int> axis;     // only this split axis
  bool uneven = true;          // false: only layouts whose ranks hold equal widths
  bool zero_width = true;      // false: no rank holds an empty shard
  std::optional<bool> fused;   // true: only fused [Q;K;V] layouts; false: no fused layout
  // Every matrix of this shape (the caller's layer); with heads > 0 its rows are heads x head_dim
  // (kv_heads KV groups, 0: as many as heads), split as AutoTP splits such a layer.
  std::optional<std::pair<std::int64_t, std::int64_t>> shape;
  std::int64_t heads = 0, kv_heads = 0;
  std::int64_t min_side = 1;   // kTwoDrawMinSide where a rounding bound is claimed, as S5 claims it
  std::int64_t max_side = 48;
  bool heads_on_rows = false;  // only whole heads along dim 0 (the per-head target)
  // Every case on a TP x DP mesh of this many DP ranks, each TP shard partitioned as dp_partition
  // says (absent: TP alone).
  std::optional<int> dp;
  DpPartition dp_partition = DpPartition::zero;

  // Throws nsv::InvalidField naming the field that cannot be drawn from.
  void validate() const;
};
rc::Gen<TpCase> tp_cases(const TpScope&);

}  // namespace nsv::checks
