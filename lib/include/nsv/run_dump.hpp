#pragma once
// Tensor dumps of a training run (what `nsv diagnose` reads): per Muon matrix, per rank, the
// gradient, the momentum buffer after the step, w_after - w_before and the weights before it.
//
// Accepted naming (README, "Diagnosing a training run"):
//   tensor name  PARAM[.KIND][.rankR]
//     PARAM  a Hugging Face parameter name of a decoder-layer matrix, any prefix before
//            `layers.L.`: model.layers.0.self_attn.q_proj.weight, layers.0.mlp.down_proj.weight,
//            module.model.layers.3.self_attn.o_proj (the `.weight` suffix is optional)
//     KIND   grad | momentum | delta (= w_after - w_before)
//     R      the tensor-parallel rank
//   file name    KIND and rank may instead come from the file's stem, whose tokens are split at
//                '.', '_' and '-': grad.safetensors, delta_rank1.safetensors, rank-0.momentum.npy.
//                A stem token `weight`/`weights` marks the weights before the step (that kind
//                has no tensor-name suffix: `.weight` ends every HF name). Kind tokens: grad,
//                grads, momentum, delta, weight, weights; rank tokens: rankR, or rank followed
//                by a token R.
//   .npy         one tensor per file, its name the file's name without `.npy`.
// A folder stands for the .safetensors and .npy files directly in it. Tensors whose PARAM is
// not a decoder-layer matrix (embeddings, norms, lm_head) are listed as skipped. A tensor with
// no rank anywhere is rank 0. Every error names the file and the tensor.
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "nsv/dtype.hpp"
#include "nsv/matrix.hpp"

namespace nsv {

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

// The canonical name of a decoder-layer matrix (layer, matrix name such as q_proj).
std::string canonical_param_name(std::int64_t layer, std::string_view matrix);

// Reads every path (a .safetensors file, a .npy file, or a folder of them). Throws
// std::runtime_error naming the file and tensor for a malformed file, an unreadable name, a
// tensor that is not 2-D, or one (param, kind, rank) given twice.
RunDump load_run_dump(const std::vector<std::string>& paths);

}  // namespace nsv
