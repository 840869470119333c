#pragma once
// One record per architecture family that `nsv audit` reads (the table is in
// analysis/src/architectures.cpp, each record with the DeepSpeed source lines of its AutoTP rule):
// the config.json names it answers to, the family's own config fields, the Muon matrices of one
// decoder layer with their roles, split axes, fused layouts and head structure, its non-Muon
// parameters, and what today's DeepSpeed does with its routed experts.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nsv/model.hpp"

namespace nsv {

struct ModelConfig;
namespace detail {
class ConfigReader;
}

// How today's DeepSpeed places a family's routed experts across the tensor-parallel ranks.
enum class ExpertPlacement {
  none,             // a dense model
  expert_parallel,  // AutoEP: whole experts per rank, Muon NS per expert (is_expert_group)
};
std::string_view expert_placement_name(ExpertPlacement);

// Parameters outside the Muon matrices, per decoder layer and once per model (embeddings and
// lm_head come from ModelDims).
struct NonMuonCounts {
  std::int64_t norms_per_layer = 0, biases_per_layer = 0, final_norm = 0;
};

struct ArchitectureRecord {
  std::string_view model_type;                   // config.json "model_type"
  std::string_view architectures[2];             // config.json "architectures" (causal LM, bare model)
  std::string_view example;                      // a checkpoint of the family (fixtures/models/)
  std::string_view autotp_rule;                  // where DeepSpeed's rule for it is: file:line at the commit read
  bool tied_by_default = false;                  // tie_word_embeddings when the config omits it
  ExpertPlacement experts = ExpertPlacement::none;
  // Reads the family's fields into the config (after model_type and architecture are known).
  void (*read)(const detail::ConfigReader&, ModelConfig&) = nullptr;
  std::vector<MuonParam> (*layer_params)(const ModelConfig&) = nullptr;
  NonMuonCounts (*non_muon)(const ModelConfig&) = nullptr;
};

std::span<const ArchitectureRecord> architecture_records();
const ArchitectureRecord* architecture_of_model_type(std::string_view);
const ArchitectureRecord* architecture_of_class(std::string_view);
// "LlamaForCausalLM (llama), ..." for the refusal of an unsupported model.
std::string supported_architectures();

// The DeepSpeed commit the records' source lines refer to.
inline constexpr std::string_view kDeepSpeedCommit = "edaa7221267243c7be7fb49c5d5f5c4fb97b4641";

}  // namespace nsv
