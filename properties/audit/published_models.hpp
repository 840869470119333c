#pragma once
// The bundled model configs (fixtures/models/) and their published figures, written out by hand
// (not computed by the code under test).
#include <cstdint>

namespace nsv::audit_props {

struct Published {
  const char* stem;
  std::int64_t hidden, heads, kv_heads, head_dim, intermediate, layers, vocab;
  bool tied;
  const char* architecture;
  std::int64_t muon_per_layer;  // by hand: q, k, v, o, gate, up, down
  std::int64_t total;           // the published parameter count of the checkpoint
};

// Muon matrices per layer written out by hand: q [H*hd, h], k and v [KV*hd, h], o [h, H*hd],
// gate and up [I, h], down [h, I]. Totals: the checkpoints' published parameter counts.
inline const Published kModels[] = {
    {"tiny-llama", 256, 8, 8, 32, 512, 1, 128, false, "LlamaForCausalLM",
     256 * 256 + 256 * 256 * 2 + 256 * 256 + 512 * 256 * 3, 721664},
    {"llama-2-7b", 4096, 32, 32, 128, 11008, 32, 32000, false, "LlamaForCausalLM",
     4096LL * 4096 * 4 + 11008LL * 4096 * 3, 6738415616LL},
    {"llama-3-8b", 4096, 32, 8, 128, 14336, 32, 128256, false, "LlamaForCausalLM",
     4096LL * 4096 * 2 + 1024LL * 4096 * 2 + 14336LL * 4096 * 3, 8030261248LL},
    {"llama-3-70b", 8192, 64, 8, 128, 28672, 80, 128256, false, "LlamaForCausalLM",
     8192LL * 8192 * 2 + 1024LL * 8192 * 2 + 28672LL * 8192 * 3, 70553706496LL},
    {"mistral-7b-v0.1", 4096, 32, 8, 128, 14336, 32, 32000, false, "MistralForCausalLM",
     4096LL * 4096 * 2 + 1024LL * 4096 * 2 + 14336LL * 4096 * 3, 7241732096LL},
    {"qwen2.5-7b", 3584, 28, 4, 128, 18944, 28, 152064, false, "Qwen2ForCausalLM",
     3584LL * 3584 * 2 + 512LL * 3584 * 2 + 18944LL * 3584 * 3, 7615616512LL},
    {"qwen2.5-0.5b", 896, 14, 2, 64, 4864, 24, 151936, true, "Qwen2ForCausalLM",
     896LL * 896 * 2 + 128LL * 896 * 2 + 4864LL * 896 * 3, 494032768LL},
};

}  // namespace nsv::audit_props
