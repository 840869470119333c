// K9s: nsverify's Muon step against DeepSpeed's own (fixtures/golden/deepspeed_steps, made by
// tools/golden/make_step_golden.py running DeepSpeed's SingleDeviceMuon with PyTorch on a CPU):
// three optimizer steps per parameter with non-zero weight decay, on whole wide and tall
// matrices and on per-head blocks that are tall (head_dim 64 > in 16, scaled by 2) and short
// (head_dim 32 < in 64, unscaled), with both kernels.
//
// Claims, per step:
//   momentum   bit-identical to DeepSpeed's: both sides lerp in fp32 with one fused multiply-add
//              (PyTorch's CPU lerp kernel, nsv::lerp_fp32), from the same bits;
//   update     DeepSpeed's distance to the float64 map (nsv's step with the NS in fp64 on the
//              same blended input) is within tolerance row golden_fp32: 2 x our own fp32
//              distance (the NS of both is an fp32 computation of one map, GEMMs summed in
//              other orders; the scale is the block's sqrt(head_dim / in) or the matrix's);
//   parameter  nsv's apply_update on DeepSpeed's parameter and DeepSpeed's update gives
//              DeepSpeed's new parameter bit for bit: p.mul_(1 - lr wd) then the fused
//              p.add_(u, alpha=-lr), the weight-decay path alone, free of NS rounding.
// Negative controls: without the weight decay, or without the tall blocks' per-head scale, the
// same comparisons fail.
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "check.hpp"
#include "golden_manifest.hpp"
#include "nsv/muon.hpp"
#include "nsv/npy.hpp"
#include "reference_runs.hpp"
#include "tolerances.hpp"

namespace nsv::checks {
namespace {

const std::filesystem::path kStepsDir = std::filesystem::path(NSV_FIXTURES_DIR) / "golden" / "deepspeed_steps";

const nlohmann::json kSteps = read_golden_manifest(kStepsDir);

MatD load_matrix(const nlohmann::json& name) { return read_npy((kStepsDir / name.get<std::string>()).string()).batch().at(0); }

MuonConfig config_of(const nlohmann::json& c) {
  MuonConfig cfg;
  cfg.beta = c.at("beta");
  cfg.nesterov = c.at("nesterov");
  cfg.lr = c.at("lr");
  cfg.weight_decay = c.at("weight_decay");
  cfg.ns.kernel = parse_kernel(c.at("kernel").get<std::string>());
  cfg.ns.dtype = parse_dtype(c.at("compute_dtype").get<std::string>());
  cfg.ns.steps = c.at("ns_steps");
  return cfg;
}

std::int64_t heads_of(const nlohmann::json& c) { return c.at("num_heads").is_null() ? 0 : c.at("num_heads").get<std::int64_t>(); }

struct StepCheck {
  bool momentum_identical = true, within_tolerance = true, parameter_identical = true;
};

// Every step of case c with nsv's configuration `cfg` and head count `heads`.
StepCheck check_case(const nlohmann::json& c, const MuonConfig& cfg, std::int64_t heads, bool report) {
  StepCheck out;
  MatD momentum = MatD::Zero(c.at("shape")[0].get<Eigen::Index>(), c.at("shape")[1].get<Eigen::Index>());
  MatD param = load_matrix(c.at("param0"));
  MuonConfig cfg64 = cfg;
  cfg64.ns = oracle_config(cfg.ns);
  for (std::size_t k = 0; k < c.at("steps").size(); ++k) {
    const nlohmann::json& files = c.at("steps")[k];
    const MatD grad = load_matrix(files.at("grad")), theirs = load_matrix(files.at("update"));
    MatD momentum64 = momentum;
    const MatD ours = muon_update(cpu(), momentum, grad, cfg, heads), map = muon_update(cpu(), momentum64, grad, cfg64, heads);
    out.momentum_identical = out.momentum_identical && bit_difference(momentum, load_matrix(files.at("momentum_after")), DType::fp32).empty();
    const double own = rel_diff(ours, map), deepspeed = rel_diff(theirs, map);
    const double bound = tolerance(Claim::golden_fp32, cfg.ns.kernel, DType::fp32).bound(0.0, own);
    out.within_tolerance = out.within_tolerance && deepspeed <= bound;
    apply_update(param, theirs, cfg);
    const MatD expected = load_matrix(files.at("param_after"));
    out.parameter_identical = out.parameter_identical && bit_difference(param, expected, DType::fp32).empty();
    if (report)
      BOOST_TEST_MESSAGE(c.at("name").get<std::string>() << " " << c.at("kernel").get<std::string>() << " step " << k
                                                        << ": update to the fp64 map: ours " << own << ", DeepSpeed " << deepspeed
                                                        << " (bound " << bound << "); ours vs DeepSpeed " << rel_diff(ours, theirs));
    param = expected;  // each step from DeepSpeed's parameter, so a failure points at its own step
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(golden_deepspeed)

BOOST_AUTO_TEST_SUITE(golden_deepspeed_steps)

BOOST_AUTO_TEST_CASE(muon_steps_with_weight_decay_and_head_blocks_match_deepspeed) {
  ++tally().quantified;
  BOOST_TEST_REQUIRE(kSteps.at("cases").size() == 8u);
  for (const auto& c : kSteps.at("cases")) {
    BOOST_TEST_CONTEXT(c.at("name").get<std::string>() << " " << c.at("kernel").get<std::string>()) {
      const StepCheck r = check_case(c, config_of(c), heads_of(c), true);
      BOOST_TEST(r.momentum_identical, "the momentum differs from DeepSpeed's in some bit");
      BOOST_TEST(r.within_tolerance, "DeepSpeed's update is farther from the fp64 map than "
                                         << tolerance(Claim::golden_fp32, Kernel::standard, DType::fp32).derivation);
      BOOST_TEST(r.parameter_identical, "p (1 - lr wd) - lr u differs from DeepSpeed's new parameter in some bit");
    }
  }
}

BOOST_AUTO_TEST_CASE(negative_control_without_weight_decay_or_head_scale_the_steps_differ) {
  for (const auto& c : kSteps.at("cases")) {
    MuonConfig no_decay = config_of(c);
    no_decay.weight_decay = 0;
    BOOST_TEST(!check_case(c, no_decay, heads_of(c), false).parameter_identical, c.at("name").get<std::string>() << ": weight decay unseen");
    if (c.at("name") == "tall_heads_wd") {
      // The whole 128 x 16 matrix instead of two 64 x 16 blocks: another map, far outside the band.
      BOOST_TEST(!check_case(c, config_of(c), 0, false).within_tolerance, "per-head scale unseen");
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()

}  // namespace nsv::checks
