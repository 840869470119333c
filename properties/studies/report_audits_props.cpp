// The audit figures `nsv report` puts in report.json ("audits", §7 of README.md; engine/
// report_audits.cpp) against the audits' own documents: for every bundled model config at each of
// the report's TP degrees, and on the report's two TP x DP meshes, each figure of the report's
// summary is the figure of the same name in the audit's JSON (render/audit_json.cpp, the schema
// `nsv audit --json` writes), found there by its definition rather than by the report's path:
//   RA1  per-head share, today's shard time, the fastest bit-identical plan (the least step time
//        among the plans bit-identical to whole-matrix NS, the first of equals in the document's
//        order), its time and its excess over shard;
//        the fused matrices and whether per_head applies to each; the two placements of MoE
//        experts.
//   RA2  on the meshes: matrices per step and per layer, the fastest bit-identical strategy and
//        its time, dp_gather's and the mesh's step times (the mesh's only where block NS applies
//        to every matrix), each owner assignment's load balance, and the matrices whose mesh
//        pieces are blocks.
// The audits' figures themselves are checked by properties/audit (closed forms, the simulated
// ranks, hand-counted ledgers); these check that the report cites them.
#include <boost/test/unit_test.hpp>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nsv/analysis/audit.hpp"
#include "nsv/engine/report_audits.hpp"
#include "nsv/analysis/model_config.hpp"
#include "nsv/render/audit.hpp"
#include "studies/exact_values.hpp"

using nlohmann::json;
namespace fs = std::filesystem;
using nsv::checks::item_where;

namespace {

const fs::path kModels = fs::path(NSV_FIXTURES_DIR) / "models";
const std::vector<int> kTps{2, 4, 8};

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("nsv_report_audits_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

json audit_document(const fs::path& config, int tp, int dp) {
  nsv::AuditOptions o;
  o.tp = tp;
  o.dp = dp;
  return nsv::audit_json(nsv::run_audit(nsv::load_model_config(config.string()), o));
}

const json& report_audits() {
  static const json audits = [] {
    TempDir out;
    return nsv::engine::run_report_audits(kModels.string(), kTps, out.path.string(),
                                          [](const std::exception& e) { return std::string(e.what()); });
  }();
  return audits;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(study_report_audits)

BOOST_AUTO_TEST_CASE(RA1_each_tp_audits_figures_are_the_audit_documents) {
  const json& audits = report_audits();
  int configs = 0, runs = 0;
  for (const json& config : audits.at("configs")) {
    ++configs;
    for (const json& run : config.at("runs")) {
      const int tp = run.at("tp").get<int>();
      BOOST_TEST_CONTEXT(config.at("config").get<std::string>() << " tp " << tp) {
        BOOST_REQUIRE_MESSAGE(!run.contains("error"), run.value("error", ""));
        ++runs;
        const json doc = audit_document(kModels / config.at("config").get<std::string>(), tp, 1);
        const json& s = run.at("summary");
        const json& totals = doc.at("totals");
        BOOST_TEST(s.at("family") == doc.at("model").at("model_type"));
        BOOST_TEST(s.at("per_head_fraction_params") == totals.at("per_head_exact_fraction_params"));
        BOOST_TEST(s.at("per_head_fraction_flops") == totals.at("per_head_exact_fraction_flops"));
        const json& shard = item_where(totals.at("plans"), "name", "shard");
        BOOST_TEST(s.at("shard_step_time_s") == shard.at("step_time_s"));
        const json* fastest = nullptr;
        for (const json& plan : totals.at("plans"))
          if (plan.at("exactness") == "bit_identical" && plan.at("semantics") == "whole" &&
              (!fastest || plan.at("step_time_s").get<double>() < fastest->at("step_time_s").get<double>()))
            fastest = &plan;
        BOOST_REQUIRE(fastest);
        BOOST_TEST(s.at("bit_identical_plan") == fastest->at("name"));
        BOOST_TEST(s.at("bit_identical_step_time_s") == fastest->at("step_time_s"));
        BOOST_TEST(s.at("bit_identical_vs_shard_s").get<double>() ==
                   fastest->at("step_time_s").get<double>() - shard.at("step_time_s").get<double>());
        json fused = json::array();
        for (const json& p : doc.at("parameters"))
          if (p.at("fused") != "none")
            fused.push_back({{"matrix", p.at("name")}, {"kind", p.at("fused")}, {"per_head_applies", p.at("per_head_applies")}});
        BOOST_TEST(s.at("fused") == fused);
        if (const json& e = totals.at("experts"); e.is_null()) {
          BOOST_TEST(s.at("experts").is_null());
        } else {
          BOOST_TEST(s.at("experts").at("deepspeed") == e.at("deepspeed"));
          BOOST_TEST(s.at("experts").at("expert_parallel_s") == e.at("expert_parallel").at("step_time_s"));
          BOOST_TEST(s.at("experts").at("tensor_parallel_exact_s") == e.at("tensor_parallel_exact").at("step_time_s"));
          BOOST_TEST(s.at("experts").at("tensor_parallel_shard_s") == e.at("tensor_parallel_shard").at("step_time_s"));
          BOOST_TEST(s.at("experts").at("tensor_parallel_exact_bytes") == e.at("tensor_parallel_exact").at("bytes_sent_max_rank"));
        }
      }
    }
  }
  BOOST_TEST_MESSAGE(runs << " audits of " << configs << " configs compared");
  BOOST_TEST(configs >= 13);
  BOOST_TEST(runs == configs * static_cast<int>(kTps.size()));
}

BOOST_AUTO_TEST_CASE(RA2_each_mesh_audits_figures_are_the_audit_documents) {
  const json& audits = report_audits();
  int meshes = 0;
  for (const json& config : audits.at("configs"))
    for (const json& mesh : config.at("meshes")) {
      const int tp = mesh.at("tp").get<int>(), dp = mesh.at("dp").get<int>();
      BOOST_TEST_CONTEXT(config.at("config").get<std::string>() << " tp " << tp << " dp " << dp) {
        BOOST_REQUIRE_MESSAGE(!mesh.contains("error"), mesh.value("error", ""));
        ++meshes;
        const json m = audit_document(kModels / config.at("config").get<std::string>(), tp, dp).at("mesh");
        BOOST_TEST(mesh.at("dp_partition") == m.at("dp_partition"));
        const json& s = mesh.at("summary");
        const auto step = [&](const std::string& name) { return item_where(m.at("steps"), "strategy", name).at("step_time_s"); };
        BOOST_TEST(s.at("matrices_per_step") == m.at("owner_load").at(0).at("matrices_per_step"));
        BOOST_TEST(s.at("matrices_per_layer") == m.at("parameters").size());
        BOOST_TEST(s.at("fastest_bit_identical") == m.at("fastest_bit_identical_step"));
        if (!m.at("fastest_bit_identical_step").is_null())
          BOOST_TEST(s.at("fastest_bit_identical_step_time_s") == step(m.at("fastest_bit_identical_step").get<std::string>()));
        BOOST_TEST(s.at("dp_gather_gather_step_time_s") == step("dp_gather+gather"));
        BOOST_TEST(s.at("dp_gather_shard_step_time_s") == step("dp_gather+shard"));
        int blocks = 0;
        for (const json& p : m.at("parameters")) blocks += item_where(p.at("strategies"), "strategy", "mesh+shard").at("applicable").get<bool>();
        BOOST_TEST(s.at("block_matrices") == blocks);
        const bool every = blocks == static_cast<int>(m.at("parameters").size());
        BOOST_TEST(s.at("mesh_shard_step_time_s").is_null() == !every);
        if (every) BOOST_TEST(s.at("mesh_shard_step_time_s") == step("mesh+shard"));
        for (const json& load : m.at("owner_load")) {
          const json& got = s.at("owner_load").at(load.at("assignment").get<std::string>());
          BOOST_TEST(got.at("step_imbalance") == load.at("step_imbalance"));
          BOOST_TEST(got.at("worst_layer_imbalance") == load.at("worst_layer_imbalance"));
          BOOST_TEST(got.at("dp_owner_gather_step_time_s") == load.at("dp_owner_gather_step_time_s"));
        }
        BOOST_TEST(s.at("owner_load").size() == m.at("owner_load").size());
      }
    }
  BOOST_TEST_MESSAGE(meshes << " mesh audits compared");
  BOOST_TEST(meshes >= 26);
}

// Negative control: RA1 tells one TP degree's audit from another's. Compared with the tp 8
// document, the tp 2 summary's shard and bit-identical step times differ for every config.
BOOST_AUTO_TEST_CASE(RA_negative_control_another_tps_document_differs) {
  int configs = 0, seen = 0;
  for (const json& config : report_audits().at("configs")) {
    const json& tp2 = config.at("runs").at(0);
    BOOST_REQUIRE(tp2.at("tp") == 2);
    const json doc = audit_document(kModels / config.at("config").get<std::string>(), 8, 1);
    ++configs;
    seen += tp2.at("summary").at("shard_step_time_s") != item_where(doc.at("totals").at("plans"), "name", "shard").at("step_time_s");
  }
  BOOST_TEST_MESSAGE("another tp's shard time differed for " << seen << " of " << configs << " configs");
  BOOST_TEST(seen == configs);
}

BOOST_AUTO_TEST_SUITE_END()
