// Hugging Face config.json reading (issue 6): the bundled configs carry the published values and
// give the published parameter counts; defaults; every malformed or partial config is rejected
// with a message naming the file and the field, by the library and by `nsv audit`.
#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit_support.hpp"
#include "published_models.hpp"
#include "check.hpp"
#include "nsv/input_file.hpp"
#include "nsv/analysis/model_config.hpp"

using nlohmann::json;
using namespace nsv;
using namespace nsv::audit_props;

namespace {

json valid_config() {
  return {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"},      {"hidden_size", 4096},
          {"num_attention_heads", 32},             {"num_key_value_heads", 8},   {"intermediate_size", 14336},
          {"num_hidden_layers", 32},               {"vocab_size", 128256},       {"tie_word_embeddings", false}};
}

// The message of the std::invalid_argument `f` throws; fails the test when nothing is thrown.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  BOOST_FAIL("expected std::invalid_argument");
  return {};
}

void check_mentions(const std::string& message, const std::vector<std::string>& needles) {
  for (const auto& n : needles) BOOST_CHECK_MESSAGE(message.find(n) != std::string::npos, "'" << message << "' does not mention '" << n << "'");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(audit_model_config)

BOOST_AUTO_TEST_SUITE(bundled_configs)

BOOST_AUTO_TEST_CASE(every_bundled_config_has_the_published_dimensions_and_counts) {
  int seen = 0;
  for (const auto& m : kModels) {
    BOOST_TEST_CONTEXT(m.stem) {
      const ModelConfig c = load_model_config(model_path(m.stem));
      BOOST_TEST(c.dims.hidden == m.hidden);
      BOOST_TEST(c.dims.heads == m.heads);
      BOOST_TEST(c.dims.kv_heads == m.kv_heads);
      BOOST_TEST(c.dims.head_dim == m.head_dim);
      BOOST_TEST(c.dims.intermediate == m.intermediate);
      BOOST_TEST(c.dims.layers == m.layers);
      BOOST_TEST(c.dims.vocab == m.vocab);
      BOOST_TEST(c.dims.tie_word_embeddings == m.tied);
      BOOST_TEST(c.architecture == m.architecture);
      BOOST_TEST(c.dims.name == m.stem);
      BOOST_TEST(c.muon_params_per_layer() == m.muon_per_layer);
      BOOST_TEST(c.muon_params() == m.muon_per_layer * m.layers);
      BOOST_TEST(c.total_params() + m.stored_twice == m.total);
      ++seen;
    }
  }
  // Every file in fixtures/models/ is one of the above (nsv report audits them all).
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(models_dir())) files += e.path().extension() == ".json" ? 1 : 0;
  BOOST_TEST(files == seen);
}

BOOST_AUTO_TEST_CASE(llama_3_8b_per_layer_by_hand) {
  // The figure quoted in the issue: 4096*4096*2 + 1024*4096*2 + 14336*4096*3 = 218,103,808.
  const ModelConfig c = load_model_config(model_path("llama-3-8b"));
  BOOST_TEST(c.muon_params_per_layer() == 218103808);
  BOOST_TEST(c.muon_params() == 218103808LL * 32);
  const auto params = llama_layer_params(c.dims);
  BOOST_TEST(params.size() == 7u);
  BOOST_TEST(params[1].rows == 1024);  // k_proj: 8 KV heads of 128
  BOOST_TEST(params[4].rows == 14336);
}

// The matrices of the new families, against their published shapes (config.json, the models'
// modeling code): fused projections and their sub-matrices, routers, experts.
BOOST_AUTO_TEST_CASE(fused_and_moe_layers_have_their_published_matrices) {
  const auto phi3 = load_model_config(model_path("phi-3-mini-4k-instruct")).layer_params();
  BOOST_TEST(phi3.size() == 4u);
  BOOST_TEST((phi3[0].fused == FusedKind::phi3));
  BOOST_TEST(phi3[0].rows == 9216);
  BOOST_TEST(phi3[0].parts.size() == 3u);
  BOOST_TEST(phi3[0].parts[0].rows == 3072);
  BOOST_TEST(phi3[0].parts[2].rows == 3072);
  BOOST_TEST((phi3[2].fused == FusedKind::gate_up));
  BOOST_TEST(phi3[2].parts[1].rows == 8192);
  const auto falcon = load_model_config(model_path("falcon-7b")).layer_params();
  BOOST_TEST((falcon[0].fused == FusedKind::bloom));
  BOOST_TEST(falcon[0].parts[1].rows == 64);  // one KV head (multi-query)
  BOOST_TEST(falcon[0].kv_groups == 71);      // FalconConfig's num_kv_heads, which AutoTP splits by
  const auto star = load_model_config(model_path("starcoder")).layer_params();
  BOOST_TEST((star[0].fused == FusedKind::bigcode));
  BOOST_TEST(star[0].rows == 6400);
  const auto mixtral = load_model_config(model_path("mixtral-8x7b-v0.1")).layer_params();
  BOOST_TEST(mixtral.size() == 8u);
  BOOST_TEST((mixtral[4].role == Role::replicated));
  BOOST_TEST(mixtral[4].rows == 8);
  BOOST_TEST(mixtral[5].copies == 8);
  BOOST_TEST(mixtral[5].expert);
  BOOST_TEST((mixtral[7].role == Role::row_parallel));
  BOOST_TEST(mixtral[7].kv_groups == 0);  // w2: the grain rule (a MoE name)
  const auto qwen = load_model_config(model_path("qwen1.5-moe-a2.7b")).layer_params();
  BOOST_TEST(qwen.size() == 12u);
  BOOST_TEST(qwen[5].copies == 60);
  BOOST_TEST(!qwen[8].expert);  // the shared expert is not a routed one
  BOOST_TEST(qwen[11].rows == 1);
  const auto gemma = load_model_config(model_path("gemma-2-9b")).layer_params();
  BOOST_TEST(gemma[0].rows == 4096);  // 16 heads x head_dim 256, not hidden 3584
  BOOST_TEST(gemma[3].cols == 4096);
}

BOOST_AUTO_TEST_CASE(qwen2_biases_are_counted_but_not_muon) {
  const ModelConfig c = load_model_config(model_path("qwen2.5-7b"));
  BOOST_TEST(c.qkv_bias);
  BOOST_TEST(c.bias_params() == 28 * (3584 + 512 + 512));
  const ModelConfig l = load_model_config(model_path("llama-3-8b"));
  BOOST_TEST(!l.qkv_bias);
  BOOST_TEST(l.bias_params() == 0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(defaults)

BOOST_AUTO_TEST_CASE(absent_optional_fields_take_the_hugging_face_defaults) {
  json j = valid_config();
  j.erase("num_key_value_heads");
  j.erase("tie_word_embeddings");
  const ModelConfig c = parse_model_config(j, "mha.json");
  BOOST_TEST(c.dims.kv_heads == 32);  // num_key_value_heads -> num_attention_heads
  BOOST_TEST(c.dims.head_dim == 128);  // hidden / heads
  BOOST_TEST(!c.dims.tie_word_embeddings);
  BOOST_TEST(c.dims.name == "mha");
  // null is absent, as transformers treats it
  j["num_key_value_heads"] = nullptr;
  j["head_dim"] = nullptr;
  BOOST_TEST(parse_model_config(j, "x").dims.kv_heads == 32);
}

BOOST_AUTO_TEST_CASE(explicit_head_dim_sets_the_attention_width) {
  json j = valid_config();
  j["hidden_size"] = 1024;
  j["num_attention_heads"] = 16;
  j["num_key_value_heads"] = 8;
  j["head_dim"] = 128;  // Qwen3-0.6B-like: 16 * 128 = 2048 != hidden
  j["architectures"] = {"Qwen3ForCausalLM"};
  j["model_type"] = "qwen3";
  const ModelConfig c = parse_model_config(j, "qwen3.json");
  const auto p = llama_layer_params(c.dims);
  BOOST_TEST(p[0].rows == 2048);
  BOOST_TEST(p[0].cols == 1024);
  BOOST_TEST(p[3].rows == 1024);
  BOOST_TEST(p[3].cols == 2048);
}

BOOST_AUTO_TEST_CASE(model_type_alone_identifies_the_family) {
  json j = valid_config();
  j.erase("architectures");
  BOOST_TEST(parse_model_config(j, "x").architecture == "LlamaForCausalLM");
  j = valid_config();
  j.erase("model_type");
  BOOST_TEST(parse_model_config(j, "x").model_type == "llama");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(rejected)

BOOST_AUTO_TEST_CASE(missing_required_fields_are_named) {
  for (const char* field : {"hidden_size", "num_attention_heads", "intermediate_size", "num_hidden_layers", "vocab_size"}) {
    json j = valid_config();
    j.erase(field);
    check_mentions(error_of([&] { parse_model_config(j, "partial.json"); }), {"partial.json", field, "missing"});
  }
  json j = valid_config();
  j.erase("architectures");
  j.erase("model_type");
  check_mentions(error_of([&] { parse_model_config(j, "anon.json"); }), {"anon.json", "model_type"});
}

BOOST_AUTO_TEST_CASE(ill_typed_fields_are_named_with_what_was_found) {
  const std::vector<std::pair<const char*, json>> cases = {
      {"hidden_size", "4096"},       {"hidden_size", 4096.0},      {"num_attention_heads", true},
      {"intermediate_size", json::array()}, {"num_hidden_layers", -2}, {"vocab_size", 0},
      {"num_key_value_heads", 2.5},  {"head_dim", "128"},          {"tie_word_embeddings", "yes"},
      {"tie_word_embeddings", 1},    {"model_type", 7},            {"hidden_size", 1e12}};
  for (const auto& [field, value] : cases) {
    json j = valid_config();
    j[field] = value;
    BOOST_TEST_CONTEXT(field << " = " << value.dump()) {
      check_mentions(error_of([&] { parse_model_config(j, "typed.json"); }), {"typed.json", field});
    }
  }
}

BOOST_AUTO_TEST_CASE(unknown_architectures_are_named) {
  for (const char* arch : {"GPT2LMHeadModel", "BloomForCausalLM", "ChatGLMModel", "DeepseekV3ForCausalLM"}) {
    json j = valid_config();
    j["architectures"] = {arch};
    j.erase("model_type");
    check_mentions(error_of([&] { parse_model_config(j, "arch.json"); }), {"arch.json", arch, "architectures", "LlamaForCausalLM"});
  }
  json j = valid_config();
  j.erase("architectures");
  j["model_type"] = "gpt2";
  check_mentions(error_of([&] { parse_model_config(j, "t.json"); }), {"t.json", "gpt2", "model_type"});
  j = valid_config();
  j["model_type"] = "mistral";  // LlamaForCausalLM with a mistral model_type
  check_mentions(error_of([&] { parse_model_config(j, "mixed.json"); }), {"mixed.json", "model_type", "LlamaForCausalLM"});
  j = valid_config();
  j["architectures"] = "LlamaForCausalLM";  // a string, not a list
  check_mentions(error_of([&] { parse_model_config(j, "s.json"); }), {"s.json", "architectures"});
}

// The refusal of an unsupported model names every family that is supported.
BOOST_AUTO_TEST_CASE(an_unsupported_model_is_refused_with_the_list_of_supported_ones) {
  json j = valid_config();
  j["architectures"] = {"JambaForCausalLM"};
  j.erase("model_type");
  const std::string m = error_of([&] { parse_model_config(j, "jamba.json"); });
  for (const char* supported : {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "GemmaForCausalLM",
                                "Gemma2ForCausalLM", "Phi3ForCausalLM", "FalconForCausalLM", "MixtralForCausalLM",
                                "Qwen2MoeForCausalLM", "GPTBigCodeForCausalLM"})
    check_mentions(m, {"jamba.json", "JambaForCausalLM", supported});
}

// A value nested 100,000 levels deep is described by its kind, never printed whole (printing it
// would recurse that deep), and the message stays short.
BOOST_AUTO_TEST_CASE(a_deeply_nested_value_is_described_not_printed) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  json j = valid_config();
  j["hidden_size"] = json::parse(deep);
  const std::string m = error_of([&] { parse_model_config(j, "deep.json"); });
  check_mentions(m, {"deep.json", "hidden_size", "an array"});
  BOOST_TEST(m.size() < 300u);
  const std::string path = write_scratch("deep.json", R"({"architectures": )" + deep + "}");
  check_mentions(error_of([&] { load_model_config(path); }), {path, "architectures"});
}

// Counts that would pass 2^63 are refused before anything is computed from them: 4096 experts of
// 2^20 x 2^20 over 100,000 layers, every field within its own limit.
BOOST_AUTO_TEST_CASE(a_config_too_large_to_count_is_refused_not_wrapped) {
  json j = valid_config();
  j["architectures"] = {"MixtralForCausalLM"};
  j["model_type"] = "mixtral";
  j["hidden_size"] = 1 << 20;
  j["num_attention_heads"] = 1 << 10;
  j["num_key_value_heads"] = 1 << 10;
  j["intermediate_size"] = 1 << 20;
  j["num_hidden_layers"] = 100000;
  j["num_local_experts"] = 4096;
  check_mentions(error_of([&] { parse_model_config(j, "huge.json"); }), {"huge.json", "too large to count", "64 bits"});
}

// Layouts a family record does not cover are refused with the field that says so.
BOOST_AUTO_TEST_CASE(family_variants_outside_the_records_are_named) {
  const json falcon = json::parse(read_input_file(model_path("falcon-7b"), "config"));
  json f40 = falcon;
  f40["new_decoder_architecture"] = true;
  check_mentions(error_of([&] { parse_model_config(f40, "f40.json"); }), {"f40.json", "new_decoder_architecture"});
  const json starcoder = json::parse(read_input_file(model_path("starcoder"), "config"));
  json mha = starcoder;
  mha["multi_query"] = false;
  check_mentions(error_of([&] { parse_model_config(mha, "mha.json"); }), {"mha.json", "multi_query"});
  const json qwen = json::parse(read_input_file(model_path("qwen1.5-moe-a2.7b"), "config"));
  json sparse = qwen;
  sparse["decoder_sparse_step"] = 2;
  check_mentions(error_of([&] { parse_model_config(sparse, "s.json"); }), {"s.json", "decoder_sparse_step"});
  json no_experts = qwen;
  no_experts.erase("num_experts");
  check_mentions(error_of([&] { parse_model_config(no_experts, "n.json"); }), {"n.json", "num_experts", "missing"});
}

BOOST_AUTO_TEST_CASE(inconsistent_values_are_explained) {
  json j = valid_config();
  j["num_key_value_heads"] = 5;
  check_mentions(error_of([&] { parse_model_config(j, "gqa.json"); }),
                 {"gqa.json", "num_attention_heads (32)", "num_key_value_heads (5)", "divisible"});
  j["num_key_value_heads"] = 64;
  check_mentions(error_of([&] { parse_model_config(j, "gqa.json"); }), {"num_key_value_heads (64)", "exceeds"});
  j = valid_config();
  j["num_attention_heads"] = 24;
  j["num_key_value_heads"] = 8;
  check_mentions(error_of([&] { parse_model_config(j, "hd.json"); }), {"hd.json", "hidden_size (4096)", "num_attention_heads (24)", "head_dim"});
  j["head_dim"] = 128;  // then it is fine (Llama-3.2-3B-like: 24 * 128 = 3072)
  BOOST_TEST(parse_model_config(j, "hd.json").dims.head_dim == 128);
}

BOOST_AUTO_TEST_CASE(malformed_json_reports_the_parser_and_the_file) {
  const std::string path = write_scratch("truncated.json", R"({"hidden_size": 4096, "num_attention_heads": )");
  check_mentions(error_of([&] { load_model_config(path); }), {path, "malformed JSON", "parse error"});
  const std::string array = write_scratch("array.json", "[1, 2, 3]");
  check_mentions(error_of([&] { load_model_config(array); }), {array, "JSON object"});
  check_mentions(error_of([&] { load_model_config("/nonexistent/config.json"); }), {"/nonexistent/config.json", "cannot open"});
}

// For any required field, removing it or giving it the wrong type is rejected with its name.
NSV_PROPERTY(any_damaged_field_is_named, ()) {
  static const std::vector<std::string> fields = {"hidden_size", "num_attention_heads", "num_key_value_heads",
                                                  "intermediate_size", "num_hidden_layers", "vocab_size", "tie_word_embeddings"};
  const auto field = *rc::gen::elementOf(fields);
  const int damage = *rc::gen::inRange(0, 4);
  json j = valid_config();
  const bool optional = field == "num_key_value_heads" || field == "tie_word_embeddings";
  switch (damage) {
    case 0:
      if (optional) return;  // absent optional fields have defaults
      j.erase(field);
      break;
    case 1: j[field] = std::to_string(*rc::gen::inRange(1, 100000)); break;
    case 2: j[field] = *rc::gen::inRange(1, 100000) + 0.5; break;
    case 3: j[field] = json::array({1}); break;
  }
  RC_LOG() << field << " damaged: " << j.dump() << "\n";
  try {
    parse_model_config(j, "damaged.json");
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    RC_ASSERT(m.find(field) != std::string::npos);
    RC_ASSERT(m.find("damaged.json") != std::string::npos);
    return;
  }
  RC_FAIL("accepted a config with a damaged " + field);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cli)

// `nsv audit` exits non-zero with the library's message on every kind of bad config.
BOOST_AUTO_TEST_CASE(nsv_audit_rejects_bad_configs_with_a_clear_message) {
  json missing = valid_config();
  missing.erase("intermediate_size");
  json typed = valid_config();
  typed["num_hidden_layers"] = "32";
  json arch = valid_config();
  arch["architectures"] = {"DeepseekV3ForCausalLM"};
  arch.erase("model_type");
  json gqa = valid_config();
  gqa["num_key_value_heads"] = 6;
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {write_scratch("missing.json", missing.dump()), {"intermediate_size", "missing"}},
      {write_scratch("typed.json", typed.dump()), {"num_hidden_layers", "string"}},
      {write_scratch("arch.json", arch.dump()), {"DeepseekV3ForCausalLM", "unsupported architecture", "MixtralForCausalLM"}},
      {write_scratch("gqa.json", gqa.dump()), {"num_key_value_heads (6)", "divisible"}},
      {write_scratch("malformed.json", "{\"hidden_size\": 4096,,}"), {"malformed JSON", "parse error"}},
      {(scratch_dir() / "absent.json").string(), {"cannot open"}},
  };
  for (const auto& [path, needles] : cases) {
    BOOST_TEST_CONTEXT(path) {
      const CliResult r = run_cli("audit --config " + quoted(path) + " --tp 8");
      BOOST_TEST(r.exit_code != 0);
      check_mentions(r.output, needles);
      check_mentions(r.output, {"nsv: error:", path});
    }
  }
}

BOOST_AUTO_TEST_CASE(nsv_audit_accepts_every_bundled_config) {
  for (const auto& m : kModels) {
    BOOST_TEST_CONTEXT(m.stem) {
      const CliResult r = run_cli("audit --config " + quoted(model_path(m.stem)) + " --tp 8 --json");
      BOOST_TEST(r.exit_code == 0);
      const json j = json::parse(r.output);
      BOOST_TEST(j["totals"]["muon_params"].get<std::int64_t>() == m.muon_per_layer * m.layers);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
