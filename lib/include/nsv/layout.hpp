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

struct Range {
  std::int64_t begin = 0, end = 0;
  std::int64_t size() const { return end - begin; }
};

// The pieces of the split axis each rank holds, in order. A plain split gives every rank one
// contiguous range; a fused [Q;K;V] matrix gives each rank one range per part.
struct Layout {
  int axis = 0;                   // 0: rows (column-parallel), 1: cols (row-parallel)
  std::int64_t dim = 0;           // length of the split axis
  std::vector<std::vector<Range>> ranks;

  int tp() const { return static_cast<int>(ranks.size()); }
  std::int64_t width(int rank) const;  // total length this rank holds
  std::vector<std::int64_t> widths() const;
};

Layout contiguous_layout(int axis, const std::vector<std::int64_t>& sizes);
// Each part (e.g. Q, K, V rows) split by its own sizes; each rank's pieces concatenated.
Layout fused_layout(int axis, const std::vector<std::vector<std::int64_t>>& part_sizes);
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

// AutoTP's layout of a split axis of length dim: head-aligned on the KV groups when there are
// any (kv_groups > 0), grain-based otherwise.
Layout autotp_layout(int axis, std::int64_t dim, int tp, std::int64_t kv_groups, std::int64_t grain);
// The same for one Muon matrix, from its split axis and KV groups.
Layout autotp_layout(const MuonParam&, int tp, std::int64_t grain = 1);

std::vector<MatD> split(const MatD& m, const Layout& layout);
MatD assemble(const std::vector<MatD>& shards, const Layout& layout);  // inverse of split

}  // namespace nsv
