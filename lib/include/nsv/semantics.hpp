#pragma once
// What a tensor-parallel result can compute, one record each: the NS of the whole matrix (its
// blocks), of each shard, or of each head; for a Muon update, times the aspect scale
// sqrt(max(1, rows/cols)) of the whole matrix's shape or of the shard's. One table for every front
// end that names what a TP result computed: `nsv diagnose` (a training run's dumps, Muon
// updates) and the checks of a user's TP function (checks/tp_catalogue.hpp: plain NS results or
// Muon updates), so that the two cannot name the same computation differently.
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "nsv/backend.hpp"
#include "nsv/layout.hpp"
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
  bool of_muon_updates, of_ns_results;
  bool of(ResultKind k) const { return k == ResultKind::muon_update ? of_muon_updates : of_ns_results; }
};
// In the order a tie is resolved (the first of several that give the same bits is named).
std::span<const SemanticsRecord> semantics_records();
const SemanticsRecord& semantics_record(Semantics);

// Each rank's block of what `record` computes from the rank's shard (for a Muon update: its
// pre-orthogonalization blend, sharded_update_from_blends; for an NS result: the matrix NS is
// applied to, run_strategy), on `layout` with whole heads of `head_dim` rows (0: none).
std::vector<MatD> semantics_blocks(const SemanticsRecord&, ResultKind, const Backend&, const std::vector<MatD>& shards,
                                   const Layout&, std::int64_t head_dim, const MuonConfig&);

}  // namespace nsv
