#pragma once
// How AutoTP cuts a matrix into per-rank shards (SPEC §2.2, DeepSpeed tp_shard.get_shard_size).
#include <cstdint>
#include <vector>

#include "nsv/matrix.hpp"
#include "nsv/model.hpp"

namespace nsv {

// Head-aligned: rank r holds KV//tp (+1 for r < KV%tp) KV groups, i.e. dim*units/KV rows.
// Uneven when tp does not divide KV; ranks past KV hold nothing (zero width).
std::vector<std::int64_t> head_aligned_sizes(std::int64_t dim, std::int64_t kv_groups, int tp);
// Grain-based: grain, rem = divmod(dim, g); rank r gets (grain//tp + (r < grain%tp))*g, and the
// last rank also takes rem. g = 1 for training, 64 for inference.
std::vector<std::int64_t> grain_sizes(std::int64_t dim, int tp, std::int64_t grain);
// get_shard_size_list itself (tp_shard.py:78-93): head-aligned on kv_heads when kv_heads > 0 and
// divides dim, grain-based otherwise (kv_heads = 0 for the MLP and MoE names the rule exempts).
std::vector<std::int64_t> autotp_sizes(std::int64_t dim, int tp, std::int64_t kv_heads, std::int64_t grain);

struct Range {
  std::int64_t begin = 0, end = 0;
  std::int64_t size() const { return end - begin; }
};

// The pieces of the split axis each rank holds, in order. A plain split gives every rank one
// contiguous range; a fused [Q;K;V] matrix gives each rank one range per part. A replicated
// range (bigcode's K and V, a router) is held whole by every rank; every other index of the
// axis is held by exactly one rank.
struct Layout {
  int axis = 0;                   // 0: rows (column-parallel), 1: cols (row-parallel)
  std::int64_t dim = 0;           // length of the split axis
  std::vector<std::vector<Range>> ranks;
  std::vector<Range> replicated;  // ranges every rank holds

  int tp() const { return static_cast<int>(ranks.size()); }
  std::int64_t width(int rank) const;  // total length this rank holds
  std::vector<std::int64_t> widths() const;
  bool has_replicas() const { return !replicated.empty(); }
  // Every range of every rank is replicated: each rank holds the whole matrix.
  bool fully_replicated() const;
};

Layout contiguous_layout(int axis, const std::vector<std::int64_t>& sizes);
// Each part (e.g. Q, K, V rows) split by its own sizes; each rank's pieces concatenated.
Layout fused_layout(int axis, const std::vector<std::vector<std::int64_t>>& part_sizes);

// One part of a fused axis: split by one size per rank, or (rank_sizes empty) held whole by
// every rank.
struct FusedPart {
  std::int64_t size = 0;
  std::vector<std::int64_t> rank_sizes;
};
Layout fused_layout(int axis, int tp, const std::vector<FusedPart>& parts);
// Every rank holds the whole axis (a matrix AutoTP leaves unsharded).
Layout replicated_layout(int axis, std::int64_t dim, int tp);
// AutoTP's cut of a fused dim-0 matrix whose sub-matrices have `part_rows` rows in storage order
// (fusedqkv_utils.py prepare_tp_fused_qkvw, layers.py SubParamColumnParallel/GateUpPack):
//   glm, phi3: every part split by autotp_sizes(part, tp, kv_heads, grain), pieces re-concatenated
//   bloom:     the whole axis split by autotp_sizes(rows, tp, kv_heads, grain) as one dimension
//   bigcode:   the first part (Q) split by autotp_sizes, the others (K, V) replicated
//   gate_up:   every part split by the grain rule (layers.py names it "mlp")
// Throws std::invalid_argument for FusedKind::none or a part list the kind cannot have.
Layout autotp_fused_layout(FusedKind, const std::vector<std::int64_t>& part_rows, int tp, std::int64_t kv_heads,
                           std::int64_t grain);
// Even split (the remainder to the first ranks, the grain-1 rule) for quick experiments.
Layout even_layout(int axis, std::int64_t dim, int tp);

// Attention heads laid along a split axis of length dim (q/k/v on dim 0, o_proj on dim 1).
// All zero: the axis has no head structure.
struct HeadGeometry {
  std::int64_t heads = 0, kv_groups = 0, head_dim = 0;
};
// heads = kv_heads = 0: no heads; kv_heads = 0: as many KV groups as heads (no GQA). Throws
// nsv::InvalidField naming `heads` or `kv_heads` when they do not divide what they split.
HeadGeometry head_geometry(std::int64_t dim, std::int64_t heads, std::int64_t kv_heads, int axis);

// A fused dim-0 projection of `rows` rows described by its head counts: the sub-matrices AutoTP
// cuts it into and the head structure per_head sees.
//   qkv kinds (glm, phi3, bloom, bigcode): [Q; K; V] with `heads` query heads and `kv_heads` KV
//     heads (bigcode: kv_heads must be 1), head_dim = rows / (heads + 2 kv_heads); AutoTP splits by
//     kv_heads for glm and phi3 and by heads for bloom and bigcode (the num_kv_heads their models'
//     configs give: Falcon's and GPT-BigCode's num_attention_heads).
//   gate_up: two equal halves, no heads (heads and kv_heads must be 0).
// Throws nsv::InvalidField naming heads, kv_heads or shape when they do not describe such a matrix.
struct FusedGeometry {
  std::vector<std::int64_t> part_rows;
  std::int64_t head_dim = 0;        // 0 for gate_up
  std::int64_t autotp_kv_heads = 0;  // what AutoTP's get_shard_size_list splits each part by (0: grain rule)
};
FusedGeometry fused_geometry(FusedKind, std::int64_t rows, std::int64_t heads, std::int64_t kv_heads);

// AutoTP's layout of a split axis of length dim: head-aligned on the KV groups when there are
// any (kv_groups > 0), grain-based otherwise.
Layout autotp_layout(int axis, std::int64_t dim, int tp, std::int64_t kv_groups, std::int64_t grain);

// One matrix split along `axis` as AutoTP splits it, from the head counts a user gives (`nsv
// shard`, `nsv sweep`): plain (FusedKind::none: head_geometry, then autotp_layout on its KV
// groups) or fused (dim 0 only: fused_geometry's sub-matrices cut by autotp_fused_layout).
// `per_head` is the head structure per_head sees: for a fused matrix every sub-matrix's heads of
// head_dim rows, grouped as AutoTP splits them. `heads` and `kv_heads` are the matrix's own
// counts with the defaults resolved (query and KV heads of a fused [Q;K;V]; 0 for gate_up).
// Throws nsv::InvalidField as head_geometry and fused_geometry do, and for a fused axis 1.
struct AutoTpSplit {
  Layout layout;
  HeadGeometry per_head;
  std::int64_t heads = 0, kv_heads = 0;
};
AutoTpSplit autotp_split(FusedKind, int axis, std::int64_t dim, int tp, std::int64_t heads, std::int64_t kv_heads,
                         std::int64_t grain);
// The same for one Muon matrix: from its role, fused kind, split axis and KV groups (a replicated
// matrix on every rank, a fused one by autotp_fused_layout, the others by autotp_sizes).
Layout autotp_layout(const MuonParam&, int tp, std::int64_t grain = 1);

std::vector<MatD> split(const MatD& m, const Layout& layout);
MatD assemble(const std::vector<MatD>& shards, const Layout& layout);  // inverse of split

}  // namespace nsv
