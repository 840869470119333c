#pragma once
// What a tensor-parallel result can compute, one record each: the NS of the whole matrix (its
// blocks), of each shard, of each head, or, on a TP x DP mesh, of each mesh rank's piece; for a
// Muon update, times the aspect scale sqrt(max(1, rows/cols)) of the whole matrix's shape or of
// the shard's (the piece's). One table for every front
// end that names what a TP result computed: `nsv diagnose` (a training run's dumps, Muon
// updates) and the checks of a user's TP function (checks/tp_catalogue.hpp: plain NS results or
// Muon updates), so that the two cannot name the same computation differently.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nsv/backend.hpp"
#include "nsv/layout.hpp"
#include "nsv/mesh.hpp"
#include "nsv/muon.hpp"
#include "nsv/strategy.hpp"

namespace nsv {

enum class Semantics {
  whole,                   // Muon: whole-matrix NS, the whole matrix's scale (the tp = 1 optimizer)
  per_head,                // per-head NS (a Muon update scales no head block)
  per_shard,               // Muon: per-shard NS, each shard's own scale (AutoTP today)
  per_shard_global_scale,  // Muon: per-shard NS, the whole matrix's scale
  whole_local_scale,       // Muon: whole-matrix NS, each shard's own scale
  whole_ns,                // plain NS of the whole matrix
  per_shard_ns,            // plain NS of each shard
  per_piece,               // Muon: NS of each mesh rank's piece, the piece's own scale (FSDP or ZeRO + Muon, naively)
  per_piece_ns,            // plain NS of each mesh rank's piece
};

// Which results a record describes: Muon updates (the aspect scale applied, DeepSpeed's
// muon_update), plain NS results, or both (per-head NS scales nothing).
enum class ResultKind { muon_update, ns };

struct SemanticsRecord {
  Semantics semantics;
  std::string_view key;    // in JSON: whole, per_head, per_shard, ...
  std::string_view label;  // "whole-matrix NS, exact", "per-shard NS, local-shape scale", ...
  Strategy strategy;       // the strategy whose run computes it
  ScaleFrom scale_from;    // Muon updates: where sqrt(rows/cols) comes from (per-head: nowhere)
  bool of_muon_updates = false, of_ns_results = false;
  // NS of each mesh rank's piece (mesh.hpp: ZeRO's flat piece as a 1 x n row, FSDP2's block of
  // whole rows), not of the TP shards: `strategy` then runs on every piece as a one-rank shard.
  bool of_mesh_pieces = false;
  bool of(ResultKind k) const { return k == ResultKind::muon_update ? of_muon_updates : of_ns_results; }
};
// In the order a tie is resolved (the first of several that give the same bits is named).
std::span<const SemanticsRecord> semantics_records();
const SemanticsRecord& semantics_record(Semantics);

// Empty when `record` describes a result on `layout` with whole heads of `head_dim` rows (0: none)
// and, on a TP x DP mesh, `mesh` (nullptr: TP alone); otherwise why not. The per-piece records
// need a mesh of dp > 1 (at dp = 1 a piece is its whole shard).
std::string semantics_inapplicable_reason(const SemanticsRecord&, const Layout&, std::int64_t head_dim,
                                          const MeshLayout* mesh = nullptr);

// Each TP rank's block of what `record` computes from the rank's shard (for a Muon update: its
// pre-orthogonalization blend, sharded_update_from_blends; for an NS result: the matrix NS is
// applied to, run_strategy), on `layout` with whole heads of `head_dim` rows (0: none) and, for
// the per-piece records, the pieces of `mesh`. Throws std::invalid_argument where the record does
// not apply (semantics_inapplicable_reason).
std::vector<MatD> semantics_blocks(const SemanticsRecord&, ResultKind, const Backend&, const std::vector<MatD>& shards,
                                   const Layout&, std::int64_t head_dim, const MuonConfig&, const MeshLayout* mesh = nullptr);

}  // namespace nsv
