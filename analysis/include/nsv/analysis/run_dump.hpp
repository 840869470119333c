#pragma once
// Tensor dumps of a training run (what `nsv diagnose` reads): per Muon matrix, per rank, the
// gradient, the momentum buffer after the step, w_after - w_before and the weights before it.
//
// Accepted naming (README, "Diagnosing a training run"):
//   tensor name  PARAM[.KIND][.rankR]
//     PARAM  a Hugging Face parameter name of one of the model's Muon matrices, named as its
//            architecture family names it (nsv/analysis/architectures.hpp): any prefix, `layers.L.` (or
//            GPT-style `h.L.`), any prefix, the family's matrix name, `.weight` optional:
//            model.layers.0.self_attn.q_proj.weight, layers.0.mlp.down_proj,
//            model.layers.0.self_attn.qkv_proj.weight (Phi-3),
//            transformer.h.0.self_attention.query_key_value.weight (Falcon),
//            model.layers.0.block_sparse_moe.experts.3.w1.weight (Mixtral: expert 3)
//     KIND   grad | momentum | delta (= w_after - w_before)
//     R      the tensor-parallel rank
//   file name    KIND and rank may instead come from the file's stem, whose tokens are split at
//                '.', '_' and '-': grad.safetensors, delta_rank1.safetensors, rank-0.momentum.npy.
//                A stem token `weight`/`weights` marks the weights before the step (that kind
//                has no tensor-name suffix: `.weight` ends every HF name). Kind tokens: grad,
//                grads, momentum, delta, weight, weights; rank tokens: rankR, or rank followed
//                by a token R.
//   .npy         one tensor per file, its name the file's name without `.npy`.
// A folder stands for the .safetensors and .npy files directly in it or, when it holds none, for
// those of its subfolders, one level deep (dump/KIND.rankR/NAME.npy). Tensors whose PARAM is
// not a Muon matrix of the family (embeddings, norms, lm_head) are listed as skipped. A tensor
// with no rank anywhere is rank 0. Every tensor's name, rank and shape are checked against the
// model and AutoTP's layout at the run's tp from the file's header, before its data is read (a
// dump is never allocated for before it is known to fit). Every error names the file and tensor.
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "nsv/dtype.hpp"
#include "nsv/matrix.hpp"
#include "nsv/model.hpp"

namespace nsv {

struct ModelConfig;

enum class DumpKind { grad, momentum, delta, weight };
std::string_view dump_kind_name(DumpKind);

struct DumpedMatrix {
  std::string file, tensor;  // where it was read from
  DType dtype = DType::fp32;  // as stored
  MatD values;
};

// What a tensor name identifies.
struct DumpKey {
  std::string param;  // canonical: model.layers.L.self_attn.q_proj.weight / model.layers.L.mlp.gate_proj.weight
  DumpKind kind = DumpKind::grad;
  int rank = 0;
  auto tie() const { return std::tie(param, kind, rank); }
  bool operator<(const DumpKey& o) const { return tie() < o.tie(); }
};

struct RunDump {
  std::map<DumpKey, DumpedMatrix> matrices;
  std::vector<std::string> skipped;  // "file: tensor" of tensors that are not decoder-layer matrices
  std::vector<std::string> sources;  // the files read

  const DumpedMatrix* find(const std::string& param, DumpKind, int rank) const;
  int max_rank() const;  // -1 when empty
};

// The canonical name of a Muon matrix: model.layers.L.self_attn.q_proj.weight (Llama's attention
// and MLP names under self_attn. and mlp.), model.layers.L.query_key_value.weight (any other
// family name as it is), model.layers.L.experts.E.w1.weight (routed expert E; expert < 0: none).
std::string canonical_param_name(std::int64_t layer, std::string_view matrix, std::int64_t expert = -1);

// One Muon matrix of a model as a dump names it.
struct DumpedParam {
  std::string name;  // canonical
  std::int64_t layer = 0;
  MuonParam param;   // the family record's matrix (a routed expert's: one of its copies)
};

// Every Muon matrix of the model, in model order: layer, the family's order, expert.
std::vector<DumpedParam> dump_params(const ModelConfig&);

// Reads every path (a .safetensors file, a .npy file, or a folder of them) of a run at `tp`.
// Throws std::runtime_error naming the file and tensor for a malformed file, an unreadable
// name, a matrix the model does not have, a rank past tp, a shape other than that rank's shard
// under AutoTP's layout (all before the tensor's data is read), or one (param, kind, rank)
// given twice.
RunDump load_run_dump(const std::vector<std::string>& paths, const ModelConfig& model, int tp);

}  // namespace nsv
