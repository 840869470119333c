// What a tensor-parallel result can compute, one record each, and how each is recomputed: by
// the strategy whose run computes it and the scale's source.
#include "nsv/semantics.hpp"

#include <stdexcept>

namespace nsv {

std::span<const SemanticsRecord> semantics_records() {
  static const SemanticsRecord records[] = {
      // gather is bit-identical to NS of the unsharded matrix (S2): the tp = 1 optimizer.
      {Semantics::whole, "whole", "whole-matrix NS, exact", Strategy::gather, ScaleFrom::global, true, false},
      // Per-head NS scales no head block (DeepSpeed's muon_update with muon_num_heads): one
      // record for Muon updates and NS results alike.
      {Semantics::per_head, "per_head", "per-head NS", Strategy::per_head, ScaleFrom::local, true, true},
      // AutoTP today: each rank orthogonalizes its shard and scales by the shard's shape.
      {Semantics::per_shard, "per_shard", "per-shard NS, local-shape scale", Strategy::shard, ScaleFrom::local, true, false},
      {Semantics::per_shard_global_scale, "per_shard_global_scale", "per-shard NS, global-shape scale", Strategy::shard,
       ScaleFrom::global, true, false},
      {Semantics::whole_local_scale, "whole_local_scale", "whole-matrix NS, local-shape scale", Strategy::gather,
       ScaleFrom::local, true, false},
      // Plain NS results (a TP Newton-Schulz, no Muon scale).
      {Semantics::whole_ns, "whole_ns", "whole-matrix NS", Strategy::gather, ScaleFrom::global, false, true},
      {Semantics::per_shard_ns, "per_shard_ns", "per-shard NS", Strategy::shard, ScaleFrom::local, false, true},
  };
  return records;
}

const SemanticsRecord& semantics_record(Semantics s) {
  for (const auto& r : semantics_records())
    if (r.semantics == s) return r;
  throw std::logic_error("no record for this semantics");
}

std::vector<MatD> semantics_blocks(const SemanticsRecord& rec, ResultKind kind, const Backend& b, const std::vector<MatD>& shards,
                                   const Layout& layout, std::int64_t head_dim, const MuonConfig& cfg) {
  if (kind == ResultKind::ns) return run_strategy(rec.strategy, b, ShardedMatrix{shards, layout, head_dim}, cfg.ns).outputs;
  MuonConfig c = cfg;
  c.scale_from = rec.scale_from;
  return sharded_update_from_blends(b, shards, layout, head_dim, rec.strategy, c).updates;
}

}  // namespace nsv
