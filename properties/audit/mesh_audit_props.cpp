// The audit at TP x DP (issue 30: nsv audit --dp, nsv/analysis/mesh_audit.hpp) against a second computation.
//
//   MA1 (exact)    the owner load balance under round-robin dealing, over the step and in the worst
//                  layer, recomputed here from the model's matrices alone (matrix k of the step,
//                  layer by layer, copies included, to DP index k mod dp; NS FLOPs by ns_flops of
//                  the whole matrix), for Llama-3-70B at tp 8 x dp 64 and 8 and Mixtral-8x7B at
//                  tp 8 x dp 64 (experts: 8 copies per layer).
//   MA2 (bounded)  dealing by size is greedy list scheduling, so its busiest index carries at most
//                  the mean plus the largest matrix (Graham's bound: when the busiest index received
//                  its last matrix it was the least loaded, so at most the mean), and at least the
//                  larger of the mean and the largest matrix (any assignment).
//   MA3 (exact)    a dp_gather strategy's step is the sum of its per-matrix times over the step's
//                  matrices, and dp_gather+gather computes the whole NS on every rank (its busiest
//                  rank's FLOPs are ns_flops of the matrix).
//   MA4            the JSON carries the mesh object (nsv.audit/1's "mesh", nsv/render/audit.hpp).
//   MA6 (exact)    the step shares and dp_owner step times from the per-matrix times (closed forms).
//   MA5            a model whose step holds more matrices than the dealing takes
//                  (kMaxMeshStepMatrices) is refused at dp > 1 naming the limit, and audited at dp 1.
// Negative control: dealing the same matrices matrix-major (all q_proj first) gives another
// round-robin imbalance, so MA1's comparison sees the order.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "audit_support.hpp"
#include "nsv/analysis/audit.hpp"
#include "nsv/invalid_field.hpp"
#include "nsv/analysis/model_config.hpp"
#include "nsv/render/audit.hpp"

using namespace nsv;

namespace {

AuditResult mesh_audit(const std::string& model, int dp) {
  AuditOptions o;
  o.tp = 8;
  o.dp = dp;
  return run_audit(load_model_config(audit_props::model_path(model)), o);
}

// Every matrix of a step, layer-major (or matrix-major), as its whole NS FLOPs and its layer.
struct StepMatrix {
  double flops;
  std::int64_t layer;
};
std::vector<StepMatrix> step_of(const AuditResult& a, bool matrix_major) {
  std::vector<StepMatrix> out;
  const auto params = a.model.layer_params();
  const auto add = [&](std::int64_t l, const MuonParam& p) {
    for (std::int64_t c = 0; c < p.copies; ++c) out.push_back({static_cast<double>(ns_flops(a.options.ns, p.rows, p.cols)), l});
  };
  if (matrix_major)
    for (const MuonParam& p : params)
      for (std::int64_t l = 0; l < a.model.dims.layers; ++l) add(l, p);
  else
    for (std::int64_t l = 0; l < a.model.dims.layers; ++l)
      for (const MuonParam& p : params) add(l, p);
  return out;
}

double max_over_mean(const std::vector<double>& loads) {
  const double mean = std::accumulate(loads.begin(), loads.end(), 0.0) / static_cast<double>(loads.size());
  return mean == 0 ? 1 : *std::max_element(loads.begin(), loads.end()) / mean;
}

// Round-robin over the step: the step's imbalance and the worst layer's.
std::pair<double, double> round_robin_imbalance(const std::vector<StepMatrix>& step, int dp, std::int64_t layers) {
  std::vector<double> loads(static_cast<std::size_t>(dp), 0);
  std::vector<std::vector<double>> by_layer(static_cast<std::size_t>(layers), loads);
  for (std::size_t k = 0; k < step.size(); ++k) {
    loads[k % static_cast<std::size_t>(dp)] += step[k].flops;
    by_layer[static_cast<std::size_t>(step[k].layer)][k % static_cast<std::size_t>(dp)] += step[k].flops;
  }
  double worst = 1;
  for (const auto& l : by_layer) worst = std::max(worst, max_over_mean(l));
  return {max_over_mean(loads), worst};
}

const OwnerLoad& load_of(const MeshAudit& m, OwnerAssignment how) {
  for (const OwnerLoad& l : m.owner_loads)
    if (l.assignment == how) return l;
  throw std::logic_error("owner load missing");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(audit_mesh)

BOOST_AUTO_TEST_CASE(MA1_MA2_owner_load_balance_against_a_second_computation) {
  for (const auto& [model, dp] : {std::pair{"llama-3-70b", 64}, std::pair{"llama-3-70b", 8}, std::pair{"mixtral-8x7b-v0.1", 64}}) {
    const AuditResult a = mesh_audit(model, dp);
    BOOST_TEST_REQUIRE(a.mesh.has_value());
    const std::vector<StepMatrix> step = step_of(a, false);
    const OwnerLoad& rr = load_of(*a.mesh, OwnerAssignment::round_robin);
    BOOST_TEST(rr.matrices_per_step == static_cast<std::int64_t>(step.size()));
    const auto [step_imbalance, worst_layer] = round_robin_imbalance(step, dp, a.model.dims.layers);
    BOOST_TEST(rr.step_imbalance == step_imbalance, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(rr.worst_layer_imbalance == worst_layer, boost::test_tools::tolerance(1e-12));

    const OwnerLoad& bs = load_of(*a.mesh, OwnerAssignment::by_size);
    double total = 0, largest = 0;
    for (const StepMatrix& m : step) {
      total += m.flops;
      largest = std::max(largest, m.flops);
    }
    const double mean = total / dp, busiest = static_cast<double>(bs.busiest_flops);
    BOOST_TEST(bs.mean_flops == mean, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(busiest <= mean + largest, model << " dp " << dp << ": Graham's bound");
    BOOST_TEST(busiest >= std::max(mean, largest) * (1 - 1e-12), model << " dp " << dp << ": no assignment does better");
  }
}

BOOST_AUTO_TEST_CASE(MA1_negative_control_another_dealing_order_gives_another_imbalance) {
  const AuditResult a = mesh_audit("llama-3-70b", 64);
  const double layer_major = round_robin_imbalance(step_of(a, false), 64, a.model.dims.layers).first;
  const double matrix_major = round_robin_imbalance(step_of(a, true), 64, a.model.dims.layers).first;
  BOOST_TEST(layer_major != matrix_major);
  BOOST_TEST(load_of(*a.mesh, OwnerAssignment::round_robin).step_imbalance != matrix_major);
}

BOOST_AUTO_TEST_CASE(MA3_dp_gather_steps_are_sums_of_their_matrices) {
  const AuditResult a = mesh_audit("llama-3-70b", 64);
  for (Strategy s : {Strategy::gather, Strategy::gram_allreduce, Strategy::shard}) {
    const MeshStrategy ms{DpStage::dp_gather, s};
    double sum = 0;
    for (const MeshParamAudit& pa : a.mesh->params) sum += pa.strategy(ms).time_s * static_cast<double>(pa.param.copies);
    BOOST_TEST(a.mesh->step(ms).step_time_s == sum * static_cast<double>(a.model.dims.layers), boost::test_tools::tolerance(1e-9));
  }
  for (const MeshParamAudit& pa : a.mesh->params)
    BOOST_TEST(pa.strategy({DpStage::dp_gather, Strategy::gather}).flops_max_rank == ns_flops(a.options.ns, pa.param.rows, pa.param.cols));
}

// MA6 (closed forms) the shares a step is judged by, recomputed from the per-matrix times alone at
// tp 8 x dp 2 and 64 (so that dividing over the wrong axis shows): dealt round-robin layer by layer
// (copies included), a dp_owner strategy's step is its busiest DP index's summed owner time, and its
// per-matrix step shares sum to the mean over the DP indices; any other strategy's shares sum to its
// step time (every rank runs every matrix).
BOOST_AUTO_TEST_CASE(MA6_step_shares_and_owner_step_times_against_their_closed_forms) {
  for (const int dp : {2, 64}) {
    const AuditResult a = mesh_audit("llama-3-70b", dp);
    BOOST_TEST_REQUIRE(a.mesh.has_value());
    for (const MeshStepTotals& t : a.mesh->steps) {
      if (!t.applies_to_every_matrix) continue;
      std::vector<double> owner_time(static_cast<std::size_t>(dp), 0);
      double shares = 0;
      std::size_t k = 0;
      for (std::int64_t l = 0; l < a.model.dims.layers; ++l)
        for (const MeshParamAudit& pa : a.mesh->params)
          for (std::int64_t c = 0; c < pa.param.copies; ++c, ++k) {
            owner_time[k % static_cast<std::size_t>(dp)] += pa.strategy(t.strategy).time_s;
            shares += pa.strategy(t.strategy).step_share_s;
          }
      const double total = std::accumulate(owner_time.begin(), owner_time.end(), 0.0);
      BOOST_TEST_CONTEXT("dp " << dp << ", " << mesh_strategy_name(t.strategy)) {
        if (t.strategy.stage == DpStage::dp_owner) {
          BOOST_TEST(t.step_time_s == *std::max_element(owner_time.begin(), owner_time.end()), boost::test_tools::tolerance(1e-12));
          BOOST_TEST(shares == total / dp, boost::test_tools::tolerance(1e-12));
        } else {
          BOOST_TEST(t.step_time_s == total, boost::test_tools::tolerance(1e-12));
          BOOST_TEST(shares == total, boost::test_tools::tolerance(1e-12));
        }
      }
    }
    const OwnerLoad& rr = load_of(*a.mesh, OwnerAssignment::round_robin);
    BOOST_TEST(rr.owner_step_time_s == a.mesh->step({DpStage::dp_owner, Strategy::owner}).step_time_s);
    BOOST_TEST(rr.gather_step_time_s == a.mesh->step({DpStage::dp_owner, Strategy::gather}).step_time_s);
  }
}

BOOST_AUTO_TEST_CASE(MA5_a_step_too_large_to_deal_is_refused_before_any_work_and_dp_1_takes_it) {
  ModelConfig model = load_model_config(audit_props::model_path("qwen1.5-moe-a2.7b"));
  std::int64_t per_layer = 0;
  for (const MuonParam& p : model.layer_params()) per_layer += p.copies;
  model.dims.layers = kMaxMeshStepMatrices / per_layer + 1;  // one layer past the limit
  AuditOptions o;
  o.tp = 8;
  o.dp = 2;
  try {
    run_audit(model, o);
    BOOST_FAIL("a mesh audit of " << model.dims.layers * per_layer << " matrices per step was not refused");
  } catch (const InvalidField& e) {
    BOOST_TEST(e.field() == "dp");
    BOOST_TEST(std::string(e.what()).find(std::to_string(kMaxMeshStepMatrices)) != std::string::npos, e.what());
  }
  o.dp = 1;
  BOOST_TEST(run_audit(model, o).totals.layers == model.dims.layers);
  model.dims.layers -= 1;  // at the limit: dealt
  o.dp = 2;
  BOOST_TEST(run_audit(model, o).mesh->owner_loads.front().matrices_per_step == model.dims.layers * per_layer);
}

BOOST_AUTO_TEST_CASE(MA4_the_json_carries_the_mesh) {
  const nlohmann::json j = audit_json(mesh_audit("llama-3-8b", 4));
  BOOST_TEST_REQUIRE(j.contains("mesh"));
  BOOST_TEST(j["mesh"]["dp"] == 4);
  BOOST_TEST(j["mesh"]["dp_partition"] == "zero");
  BOOST_TEST(j["mesh"]["parameters"].size() == 7u);
  BOOST_TEST(j["mesh"]["owner_load"].size() == 2u);
  AuditOptions one;
  BOOST_TEST(!audit_json(run_audit(load_model_config(audit_props::model_path("llama-3-8b")), one)).contains("mesh"));
}

BOOST_AUTO_TEST_SUITE_END()
