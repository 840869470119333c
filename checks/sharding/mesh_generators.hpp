#pragma once
// RapidCheck generators for TP x DP meshes (nsv/mesh.hpp): a one-axis case of
// layout_generators.hpp (any shape, axis and split rule, or a GQA projection with heads on dim 0)
// whose every TP shard is partitioned again over dp ranks, ZeRO's flat way or FSDP2's row way.
// dp runs past the shard's length sometimes, so zero-size pieces occur. Every choice is an rc::gen
// draw: a case shrinks towards tp 1, dp 1 and small shapes, and replays from its seed.
#include <rapidcheck.h>

#include <cstdint>
#include <ostream>

#include "layout_generators.hpp"
#include "nsv/config_schema.hpp"
#include "nsv/mesh.hpp"

namespace nsv::checks::shard {

struct MeshCase {
  bool heads = false;  // a GQA projection (head_case), else a plain matrix (shard_case)
  ShardCase shard_case;
  HeadCase head_case;
  int dp = 1;
  DpPartition partition = DpPartition::zero;

  MatD matrix() const { return heads ? head_case.matrix() : shard_case.matrix(); }
  Layout tp_layout() const { return heads ? head_case.layout() : shard_case.layout(); }
  std::int64_t head_dim() const { return heads ? head_case.head_dim : 0; }
  std::int64_t rows() const { return heads ? head_case.rows() : shard_case.rows; }
  std::int64_t cols() const { return heads ? head_case.in : shard_case.cols; }
  MeshLayout layout() const { return mesh_layout(tp_layout(), rows(), cols(), dp, partition); }
};

inline void showValue(const MeshCase& c, std::ostream& os) {
  if (c.heads)
    showValue(c.head_case, os);
  else
    showValue(c.shard_case, os);
  os << "; dp " << c.dp << " (" << name_of(c.partition) << " partition)";
}

// DP degrees: 1..4 mostly, sometimes up to 9 (more pieces than a small shard has rows or elements).
inline rc::Gen<int> dp_degrees() {
  return rc::gen::weightedOneOf<int>({{5, rc::gen::inRange(1, 5)}, {1, rc::gen::inRange(5, 10)}});
}

inline rc::Gen<DpPartition> dp_partitions() { return rc::gen::element(DpPartition::zero, DpPartition::fsdp); }

inline rc::Gen<MeshCase> mesh_cases(rc::Gen<int> tps = tp_degrees(6), rc::Gen<int> dps = dp_degrees(),
                                    std::int64_t min_side = 1, std::int64_t max_side = max_dim()) {
  return rc::gen::map(rc::gen::tuple(rc::gen::inRange(0, 4), shard_cases(tps, min_side, max_side), head_cases(tps, max_side), dps,
                                     dp_partitions()),
                      [](const std::tuple<int, ShardCase, HeadCase, int, DpPartition>& t) {
                        const auto& [kind, sc, hc, dp, partition] = t;
                        return MeshCase{kind == 0, sc, hc, dp, partition};  // one case in four is a GQA projection
                      });
}

}  // namespace nsv::checks::shard
