// The semantics `nsv diagnose` tests a run's update against, one record each, and how each is
// recomputed: by the strategy whose run computes it (strategy.hpp) and the scale's source.
#include <stdexcept>

#include "nsv/diagnose.hpp"

namespace nsv {

std::span<const SemanticsRecord> semantics_records() {
  static const SemanticsRecord records[] = {
      // gather is bit-identical to NS of the unsharded matrix (S2): the tp = 1 optimizer.
      {Semantics::whole, "whole", "whole-matrix NS, exact", Strategy::gather, ScaleFrom::global},
      // Per-head NS scales each head block by its own shape, which no shard changes: one variant.
      {Semantics::per_head, "per_head", "per-head NS", Strategy::per_head, ScaleFrom::local},
      // AutoTP today: each rank orthogonalizes its shard and scales by the shard's shape.
      {Semantics::per_shard, "per_shard", "per-shard NS, local-shape scale", Strategy::shard, ScaleFrom::local},
      {Semantics::per_shard_global_scale, "per_shard_global_scale", "per-shard NS, global-shape scale", Strategy::shard,
       ScaleFrom::global},
      {Semantics::whole_local_scale, "whole_local_scale", "whole-matrix NS, local-shape scale", Strategy::gather,
       ScaleFrom::local},
  };
  return records;
}

const SemanticsRecord& semantics_record(Semantics s) {
  for (const auto& r : semantics_records())
    if (r.semantics == s) return r;
  throw std::logic_error("no record for this semantics");
}

}  // namespace nsv
