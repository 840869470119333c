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
  std::int64_t muon_per_layer;  // by hand: every Muon matrix of a layer (routed experts x their count)
  std::int64_t total;           // the published parameter count of the checkpoint
  // Parameters the published count includes twice: Falcon-7B's checkpoint stores the lm_head it
  // ties to the embedding as a tensor of its own (vocab x hidden), and the Hub counts stored tensors.
  std::int64_t stored_twice = 0;
};

// Muon matrices per layer written out by hand: q [H*hd, h], k and v [KV*hd, h], o [h, H*hd],
// gate and up [I, h], down [h, I] (fused: qkv [(H+2KV)*hd, h], gate_up [2I, h]; MoE: the router
// [E, h] and E copies of each expert matrix). Totals: the checkpoints' published parameter counts,
// each with its source; none is computed by nsverify.
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
    // google/gemma-2-9b: the Hub's safetensors parameter count 9,241,705,984 (also KerasHub's
    // gemma2_9b_en preset "params"). head_dim 256 explicit: q [4096, 3584], o [3584, 4096].
    {"gemma-2-9b", 3584, 16, 8, 256, 14336, 42, 256000, true, "Gemma2ForCausalLM",
     4096LL * 3584 * 2 + 2048LL * 3584 * 2 + 14336LL * 3584 * 3, 9241705984LL},
    // microsoft/Phi-3-mini-4k-instruct: the Hub's safetensors count 3,821,079,552 (KerasHub
    // phi3_mini_4k_instruct_en "params" the same). qkv_proj [9216, 3072], gate_up_proj [16384, 3072].
    {"phi-3-mini-4k-instruct", 3072, 32, 32, 96, 8192, 32, 32064, false, "Phi3ForCausalLM",
     9216LL * 3072 + 3072LL * 3072 + 16384LL * 3072 + 3072LL * 8192, 3821079552LL},
    // tiiuae/falcon-7b: the Hub's safetensors count 7,217,189,760 (its index's total_size / 2,
    // bf16), which counts the tied lm_head [65024, 4544] stored separately.
    // query_key_value [(71 + 2) * 64, 4544], dense [4544, 4544], dense_h_to_4h and dense_4h_to_h.
    {"falcon-7b", 4544, 71, 1, 64, 18176, 32, 65024, true, "FalconForCausalLM",
     4672LL * 4544 + 4544LL * 4544 + 18176LL * 4544 * 2, 7217189760LL, 65024LL * 4544},
    // mistralai/Mixtral-8x7B-v0.1: 46,702,792,704 (the Hub's safetensors count, KerasHub
    // mixtral_8_7b_en "params"). Router [8, 4096], 8 experts of w1, w3 [14336, 4096] and w2.
    {"mixtral-8x7b-v0.1", 4096, 32, 8, 128, 14336, 32, 32000, false, "MixtralForCausalLM",
     4096LL * 4096 * 2 + 1024LL * 4096 * 2 + 8LL * 4096 + 8LL * 14336 * 4096 * 3, 46702792704LL},
    // Qwen/Qwen1.5-MoE-A2.7B: 14,315,784,192 (KerasHub qwen1.5_moe_2.7b_en "params"; the model's
    // own parameter printout). Router [60, 2048], 60 experts of [1408, 2048] x 3, the shared
    // expert [5632, 2048] x 3 and its gate [1, 2048].
    {"qwen1.5-moe-a2.7b", 2048, 16, 16, 128, 5632, 24, 151936, false, "Qwen2MoeForCausalLM",
     2048LL * 2048 * 4 + 60LL * 2048 + 60LL * 1408 * 2048 * 3 + 5632LL * 2048 * 3 + 2048LL, 14315784192LL},
    // bigcode/starcoder: 15,517,456,384 (the count listed for StarCoder-15B fine-tunes of the same
    // shapes, fixtures/models/README.md). c_attn [6144 + 2 * 128, 6144], c_proj, c_fc [24576, 6144].
    {"starcoder", 6144, 48, 1, 128, 24576, 40, 49152, true, "GPTBigCodeForCausalLM",
     6400LL * 6144 + 6144LL * 6144 + 24576LL * 6144 * 2, 15517456384LL},
};

}  // namespace nsv::audit_props
