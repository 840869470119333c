// What a tensor-parallel result can compute, one record each, and how each is recomputed: by
// the strategy whose run computes it and the scale's source.
#include "nsv/semantics.hpp"

#include <stdexcept>

namespace nsv {

std::span<const SemanticsRecord> semantics_records() {
  static const SemanticsRecord records[] = {
      // gather is bit-identical to NS of the unsharded matrix (S2): the tp = 1 optimizer.
      {.semantics = Semantics::whole, .key = "whole", .label = "whole-matrix NS, exact", .strategy = Strategy::gather,
       .scale_from = ScaleFrom::global, .of_muon_updates = true},
      // Per-head NS scales no head block (DeepSpeed's muon_update with muon_num_heads): one
      // record for Muon updates and NS results alike.
      {.semantics = Semantics::per_head, .key = "per_head", .label = "per-head NS", .strategy = Strategy::per_head,
       .scale_from = ScaleFrom::local, .of_muon_updates = true, .of_ns_results = true},
      // AutoTP today: each rank orthogonalizes its shard and scales by the shard's shape.
      {.semantics = Semantics::per_shard, .key = "per_shard", .label = "per-shard NS, local-shape scale",
       .strategy = Strategy::shard, .scale_from = ScaleFrom::local, .of_muon_updates = true},
      {.semantics = Semantics::per_shard_global_scale, .key = "per_shard_global_scale",
       .label = "per-shard NS, global-shape scale", .strategy = Strategy::shard, .scale_from = ScaleFrom::global,
       .of_muon_updates = true},
      {.semantics = Semantics::whole_local_scale, .key = "whole_local_scale", .label = "whole-matrix NS, local-shape scale",
       .strategy = Strategy::gather, .scale_from = ScaleFrom::local, .of_muon_updates = true},
      // Plain NS results (a TP Newton-Schulz, no Muon scale).
      {.semantics = Semantics::whole_ns, .key = "whole_ns", .label = "whole-matrix NS", .strategy = Strategy::gather,
       .scale_from = ScaleFrom::global, .of_ns_results = true},
      {.semantics = Semantics::per_shard_ns, .key = "per_shard_ns", .label = "per-shard NS", .strategy = Strategy::shard,
       .scale_from = ScaleFrom::local, .of_ns_results = true},
      // FSDP or ZeRO combined with Muon naively: every mesh rank orthogonalizes the piece it holds
      // (and scales it by the piece's shape) instead of the TP shard the pieces partition.
      {.semantics = Semantics::per_piece, .key = "per_piece", .label = "NS of each mesh piece, the piece's scale",
       .strategy = Strategy::shard, .scale_from = ScaleFrom::local, .of_muon_updates = true, .of_mesh_pieces = true},
      {.semantics = Semantics::per_piece_ns, .key = "per_piece_ns", .label = "NS of each mesh piece",
       .strategy = Strategy::shard, .scale_from = ScaleFrom::local, .of_ns_results = true, .of_mesh_pieces = true},
  };
  return records;
}

const SemanticsRecord& semantics_record(Semantics s) {
  for (const auto& r : semantics_records())
    if (r.semantics == s) return r;
  throw std::logic_error("no record for this semantics");
}

std::string semantics_inapplicable_reason(const SemanticsRecord& rec, const Layout& layout, std::int64_t head_dim,
                                          const MeshLayout* mesh) {
  if (rec.of_mesh_pieces && (mesh == nullptr || mesh->dp < 2))
    return std::string(rec.label) + " needs a TP x DP mesh of dp >= 2 (at dp 1 every piece is its whole shard)";
  return inapplicable_reason(rec.strategy, layout, head_dim);
}

namespace {

// `rec`'s result on `shards` laid out by `layout` (per_piece_blocks: one piece as a one-rank shard).
std::vector<MatD> one_rank_blocks(const SemanticsRecord& rec, ResultKind kind, const Backend& b, const std::vector<MatD>& shards,
                                  const Layout& layout, std::int64_t head_dim, const MuonConfig& cfg) {
  if (kind == ResultKind::ns) return run_strategy(rec.strategy, b, ShardedMatrix{shards, layout, head_dim}, cfg.ns).outputs;
  MuonConfig c = cfg;
  c.scale_from = rec.scale_from;
  return sharded_update_from_blends(b, shards, layout, head_dim, rec.strategy, c).updates;
}

// Every mesh rank's piece as a matrix (piece_matrix_shape), run as a one-rank shard, and the TP
// shards reassembled from the results.
std::vector<MatD> per_piece_blocks(const SemanticsRecord& rec, ResultKind kind, const Backend& b, const std::vector<MatD>& shards,
                                   const MeshLayout& mesh, const MuonConfig& cfg) {
  std::vector<MatD> pieces = pieces_of_shards(shards, mesh);
  for (int r = 0; r < mesh.size(); ++r) {
    const auto [rows, cols] = mesh.piece_matrix_shape(r);
    if (rows * cols == 0) continue;  // an empty piece: nothing to orthogonalize
    const MatD piece = shard_from_flat(pieces[static_cast<std::size_t>(r)], rows, cols);
    const MatD result = one_rank_blocks(rec, kind, b, {piece}, contiguous_layout(0, {rows}), 0, cfg).front();
    pieces[static_cast<std::size_t>(r)] = flat_piece(result, Range{0, rows * cols});
  }
  return shards_from_pieces(pieces, mesh);
}

}  // namespace

std::vector<MatD> semantics_blocks(const SemanticsRecord& rec, ResultKind kind, const Backend& b, const std::vector<MatD>& shards,
                                   const Layout& layout, std::int64_t head_dim, const MuonConfig& cfg, const MeshLayout* mesh) {
  if (const std::string why = semantics_inapplicable_reason(rec, layout, head_dim, mesh); !why.empty())
    throw std::invalid_argument(why);
  if (rec.of_mesh_pieces) return per_piece_blocks(rec, kind, b, shards, *mesh, cfg);
  return one_rank_blocks(rec, kind, b, shards, layout, head_dim, cfg);
}

}  // namespace nsv
