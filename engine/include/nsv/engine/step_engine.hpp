#pragma once
// The engine behind `nsv step` and the real-gradient table of `nsv report`: k Muon steps of a
// Llama decoder layer's seven matrices at tp = 1 and at tp = N under one strategy, compared
// parameter by parameter.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nsv/config_schema.hpp"
#include "nsv/model.hpp"
#include "nsv/muon.hpp"

namespace nsv::engine {

struct StepSpec {
  std::string grads_dir;     // DIR/step{0,1,...}/<name>.npy (+ DIR/weights/, DIR/grads.json); "" = generate
  std::uint64_t seed = 0;    // generated gradients
  ModelDims dims{"seed-llama", 256, 8, 8, 32, 512, 1, 128, false};  // overridden by DIR/grads.json
  int tp = 2;
  int steps_k = 1;
  std::string strategy = "shard";
  std::string fallback = "shard";  // for matrices `strategy` does not apply to (per_head on o/MLP)
  std::string order = std::string(name_of(StrategyOptions{}.order));
  MuonConfig muon;                 // lr 0.05, beta 0.95 set by the command

  std::string source() const;
};

struct ParamStep {
  MuonParam param;
  std::vector<std::int64_t> widths;  // shard sizes along the split axis
  // Rows x cols rank 0 holds, from the library's shard_shape (so the report keeps no copy of the rule).
  std::pair<std::int64_t, std::int64_t> rank0_shard{0, 0};
  std::string strategy;              // what ran for this matrix
  std::string note;                  // fallback explanation, if any
  double scale_1 = 1;                // sqrt(rows/cols) scale at tp = 1
  std::vector<double> scales_n;      // per rank at tp = N
  double rel_diff = 0, cosine = 1;   // delta_w at tp = N vs tp = 1 (same semantics)
  double norm_1 = 0, norm_n = 0, norm_ratio = 1;
  bool bit_identical = false;
  double rel_diff_vs_whole = 0;      // tp = N vs whole-matrix Muon at tp = 1 (differs for per_head)
  std::uint64_t bytes_sent = 0, flops = 0;  // max over ranks
  int collectives = 0;
};

struct StepOutcome {
  ModelDims dims;
  std::string source;
  // The initializer's standard deviation grads.json records (tools/make_grads.py), when it does.
  std::optional<double> initializer_range;
  bool real_weights = false;
  std::vector<std::vector<ParamStep>> steps;  // [step][param]
  nlohmann::json to_json(const StepSpec&) const;
};

StepOutcome run_step(const StepSpec&);

// How many step{N} folders DIR holds (0 if none).
int available_grad_steps(const std::string& dir);

// The seed's figures (SPEC §5) for the side-by-side comparison.
struct SeedStepFigures {
  static constexpr double rel_diff = 0.39, cosine = 0.936, norm_1 = 0.0145, norm_2 = 0.0161;
  static constexpr double torch_rel_diff = 0.73, torch_cosine = 0.86;
};

}  // namespace nsv::engine
