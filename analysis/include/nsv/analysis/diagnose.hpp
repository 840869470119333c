#pragma once
// Diagnosing a training run from its tensor dumps (`nsv diagnose`): per Muon matrix, how far the
// tp = N update is from the tp = 1 update, which semantics each one computed, and whether the
// run is tp-invariant within a derived bound. The library computes the figures; front ends word
// them (cli/cmd_diagnose.cpp).
//
// For each matrix the candidate's shards are reassembled with AutoTP's layout, its gradients
// compared with the reference's, and its update u = -(delta + lr wd w) / lr (delta = w_after -
// w_before) compared with the reference's and with each semantics recomputed from the run's own
// dumped gradient and momentum by the reference kernels (sharded_update_from_blends). A
// semantics "matches" when the observed update lies within match_bound (diagnose_bounds.cpp,
// derivation there) of it; when none does, the update is unexplained.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nsv/backend.hpp"
#include "nsv/model.hpp"
#include "nsv/muon.hpp"
#include "nsv/analysis/run_dump.hpp"
#include "nsv/semantics.hpp"

namespace nsv {

struct MatrixComparison {
  double rel_diff = 0, cosine = 1, norm_ratio = 1, max_abs_diff = 0;
  bool bit_identical = true;
};
MatrixComparison compare_matrices(const MatD& a, const MatD& reference);

// One semantics recomputed from a run's gradient and momentum, against the run's update.
struct SemanticsFit {
  Semantics semantics;
  double rel_diff = 0;   // ||u_observed - u_semantics|| / ||u_semantics||
  double own_error = 0;  // the kernel's own error: ||u_semantics - u_semantics(fp64)|| / ||u_semantics(fp64)||
  double bound = 0;      // match_bound
  bool within = false;   // rel_diff <= bound
  std::vector<Semantics> same_bits_as;  // earlier records whose recomputation has the same bits
};

// What one run (the reference at tp = 1, or the candidate at tp = N) computed for one matrix.
struct RunVerdict {
  std::vector<SemanticsFit> fits;          // every semantics that applies, in record order
  std::optional<Semantics> match;          // the first fit within its bound; none: unexplained
  std::vector<Semantics> also_within;      // other fits within their bounds (not the same bits)
  std::string not_classified;              // why no fit was tried (empty when they were)
  double delta_rounding = 0;               // e_delta of match_bound, for the record
};

struct ParamDiagnosis {
  MuonParam param;
  std::string name;                         // canonical HF name
  std::vector<std::int64_t> widths;         // AutoTP shard sizes along param.split_axis at tp = N
  bool first_step = false;                  // no momentum dumped: momentum taken as zero before the step
  std::optional<MatrixComparison> grad;     // candidate vs reference gradient (when both dumped)
  // Candidate vs reference weights before the step (when both dumped). Runs meant to be compared
  // start the step from the same weights; when these differ, part of the updates' difference
  // comes from that, and the front ends warn with this figure.
  std::optional<MatrixComparison> weight;
  MatrixComparison update;                  // candidate delta vs reference delta (the seed's table)
  RunVerdict reference, candidate;
  // tp-invariance: the candidate's update is the reference's up to what the difference of their
  // own inputs explains, under the reference's semantics (whole when it is unexplained).
  double invariance_bound = 0;              // invariance_bound(): input part + both match bounds
  double input_difference = 0;              // fp64 recomputation on candidate vs reference inputs
  bool tp_invariant = false;
};

struct Diagnosis {
  std::string model;
  int tp = 1;
  MuonConfig muon;
  std::vector<ParamDiagnosis> params;          // in model order, those both dumps hold
  std::vector<std::string> not_dumped;         // Muon matrices of the model neither run dumped
  std::vector<std::string> skipped;            // tensors that are not decoder-layer matrices
};

// The derivations of the two bounds (analysis/src/diagnose_bounds.cpp), for machine-readable output.
extern const std::string_view kMatchBoundDerivation;
extern const std::string_view kInvarianceBoundDerivation;

// Throws std::invalid_argument naming the file, tensor and what to fix for dumps that do not
// fit the model or each other: a shard of the wrong shape, a missing rank, a matrix the model
// does not have, a delta without gradient, a run without any matrix both dumps hold.
// The model's Muon matrices are its architecture family's (ModelConfig::layer_params), by the
// names load_run_dump gives them.
Diagnosis diagnose(const Backend&, const RunDump& reference, const RunDump& candidate, const ModelConfig&, int tp,
                   const MuonConfig&);

}  // namespace nsv
