// K9: our kernels against DeepSpeed's own (fixtures/golden/deepspeed, produced by running
// DeepSpeed's zeropower_via_newtonschulz5, zeropower_via_gram_newtonschulz and
// _per_head_orthogonalize with PyTorch on a CPU). OpInfo style: every case of the manifest is
// checked by the same code, with a tolerance from tolerances.hpp.
//
// What is compared, and why that way. Our fp32 result and DeepSpeed's are both fp32 computations
// of one map; our float64 result is that map to ~1e-14. Comparing each to the float64 map and
// bounding DeepSpeed's distance by our own distance (times 2) tests that DeepSpeed computes the
// same map as we do, with errors of the same size. (Bounding rel(ours, DeepSpeed) by the sum of
// the two distances would hold by the triangle inequality whatever DeepSpeed computed; it is
// reported, not asserted.)
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "check.hpp"
#include "golden_manifest.hpp"
#include "nsv/npy.hpp"
#include "reference_runs.hpp"
#include "tolerances.hpp"

namespace nsv::checks {
namespace {

const std::filesystem::path kGoldenDir = std::filesystem::path(NSV_FIXTURES_DIR) / "golden" / "deepspeed";

// Read once; iterating the returned temporary's ["cases"] directly would iterate a destroyed one.
const nlohmann::json kManifest = read_golden_manifest(kGoldenDir);

Batch load(const std::string& name) { return read_npy((kGoldenDir / name).string()).batch(); }

// All matrices of a batch stacked on top of each other: the case's result as one matrix.
MatD stacked(const Batch& b) {
  Eigen::Index rows = 0;
  for (const auto& m : b) rows += m.rows();
  MatD out(rows, b.empty() ? 0 : b[0].cols());
  Eigen::Index at = 0;
  for (const auto& m : b) {
    out.middleRows(at, m.rows()) = m;
    at += m.rows();
  }
  return out;
}

// One golden case: the matrices NS runs on, and how to assemble our result like DeepSpeed's.
struct GoldenCase {
  std::string name;
  NsConfig cfg;
  Batch inputs;       // the independent matrices NS runs on (heads, for per_head)
  double head_scale;  // per_head: sqrt(head_dim / in) when head_dim > in, else 1
  MatD expected;      // DeepSpeed's output, stacked

  MatD run(const NsConfig& c) const {
    Batch out = cpu().newton_schulz(inputs, c);
    for (auto& m : out) m *= head_scale;
    return stacked(out);
  }
};

// DeepSpeed's per-head NS (PR #8384): view [H*hd, in] as H matrices hd x in, NS each, scale each
// by sqrt(hd / in) when hd > in.
GoldenCase golden_case(const nlohmann::json& c) {
  GoldenCase g;
  g.name = c["output"].get<std::string>();
  g.cfg.kernel = parse_kernel(c["kernel"].get<std::string>());
  g.cfg.dtype = parse_dtype(c["compute_dtype"].get<std::string>());
  g.cfg.steps = c["steps"].get<int>();
  g.head_scale = 1.0;
  const Batch input = load(c["input"].get<std::string>());
  if (c["kind"] == "per_head") {
    const MatD& w = input.at(0);
    const auto heads = c["num_heads"].get<Eigen::Index>();
    BOOST_REQUIRE_EQUAL(w.rows() % heads, 0);
    const Eigen::Index hd = w.rows() / heads;
    for (Eigen::Index h = 0; h < heads; ++h) g.inputs.push_back(w.middleRows(h * hd, hd));
    if (hd > w.cols()) g.head_scale = std::sqrt(static_cast<double>(hd) / static_cast<double>(w.cols()));
  } else {
    g.inputs = input;
  }
  g.expected = stacked(load(g.name));
  return g;
}

bool is_zero(const MatD& m) { return (m.array() == 0.0).all(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(golden_deepspeed)

BOOST_AUTO_TEST_SUITE(golden_deepspeed)

// [bounded] fp32 ns and per_head cases, with both ways of computing the n x n products:
// DeepSpeed's distance to the float64 map is within the tolerance row golden_fp32 (2 x our own
// fp32 distance); zero inputs give exact zeros. products=full computes what PyTorch computes, so
// it is where bit-identical results show.
BOOST_AUTO_TEST_CASE(fp32_cases_match_deepspeed_within_our_own_rounding) {
  ++tally().quantified;
  for (const Products how : {Products::full, Products::symmetric}) {
    int checked = 0, bit_identical = 0;
    double worst_agreement = 0, worst_ratio = 0;
    std::map<std::string, double> worst_by_config;
    for (const auto& c : kManifest.at("cases")) {
      if (c["kind"] == "muon_update" || c["compute_dtype"] != "fp32") continue;
      GoldenCase g = golden_case(c);
      g.cfg.products = how;
      BOOST_TEST_CONTEXT("golden case " << g.name << ", products=" << products_name(how)) {
        const MatD ours = g.run(g.cfg), oracle = g.run(oracle_config(g.cfg));
        BOOST_CHECK(all_finite(ours) && all_finite(g.expected));
        if (c.contains("output_has_nan")) BOOST_CHECK_EQUAL(c.at("output_has_nan").get<bool>(), !all_finite(g.expected));
        if (is_zero(oracle)) {
          BOOST_CHECK(is_zero(ours) && is_zero(g.expected));
          ++checked;
          continue;
        }
        const double own = rel_diff(ours, oracle), deepspeed = rel_diff(g.expected, oracle), agreement = rel_diff(ours, g.expected);
        const Tolerance& tol = tolerance(Claim::golden_fp32, g.cfg.kernel, DType::fp32);
        const double bound = tol.bound(0.0, own);
        BOOST_TEST_MESSAGE(g.name << " products=" << products_name(how) << ": ours vs DeepSpeed " << agreement
                                  << "; to the fp64 map: ours " << own << ", DeepSpeed " << deepspeed << " (bound " << bound << ")");
        BOOST_CHECK_MESSAGE(deepspeed <= bound, "DeepSpeed's distance to the float64 map " << deepspeed << " exceeds " << bound
                                                                                           << ": " << tol.derivation);
        worst_agreement = std::max(worst_agreement, agreement);
        bit_identical += compare_bits(ours, g.expected, DType::fp32).identical;
        worst_ratio = std::max(worst_ratio, deepspeed / own);
        const std::string config = std::string(kernel_name(g.cfg.kernel)) + " fp32 " + std::to_string(g.cfg.steps) + " steps";
        worst_by_config[config] = std::max(worst_by_config[config], agreement);
        ++checked;
      }
    }
    for (const auto& [config, worst] : worst_by_config)
      BOOST_TEST_MESSAGE("products=" << products_name(how) << ": worst rel. diff to DeepSpeed, " << config << ": " << worst);
    BOOST_TEST_MESSAGE("products=" << products_name(how) << ": " << checked << " fp32 golden cases (" << bit_identical
                                   << " non-zero ones bit-identical to DeepSpeed); worst rel. diff to DeepSpeed "
                                   << worst_agreement << "; worst DeepSpeed/ours distance to the fp64 map " << worst_ratio);
    BOOST_CHECK_GT(checked, 0);
  }
}

// [bounded + reported] bf16 cases. DeepSpeed's ran on PyTorch's CPU bf16 arithmetic (bf16 partial
// sums, no AVX512-BF16, Python scalars cast to bf16), which our accumulate=compute emulates: bit for
// bit on the 2-D wide and square cases of this set that sum in k order, not where torch's kernel
// chooses another path (a tall input's transposed view, the largest products, batches), so
// agreement is reported for both accumulation modes (with the bit-identical count), not
// asserted. What is asserted: our bf16 with fp32 accumulation (the tensor-core model) is within
// (u_bf16 / u_fp32) x our fp32 error of the float64 map (tolerance row golden_bf16), and zero
// stays zero.
BOOST_AUTO_TEST_CASE(bf16_cases_are_reported_and_bounded_against_the_fp64_map) {
  ++tally().quantified;
  int checked = 0;
  double worst_compute = 0, worst_fp32_acc = 0, worst_deepspeed = 0;
  int bit_identical = 0;
  for (const auto& c : kManifest.at("cases")) {
    if (c["kind"] == "muon_update" || c["compute_dtype"] != "bf16") continue;
    const GoldenCase g = golden_case(c);
    BOOST_TEST_CONTEXT("golden case " << g.name) {
      NsConfig compute = g.cfg, fp32_acc = g.cfg;
      compute.accumulate = Accumulate::compute;
      compute.products = Products::full;  // PyTorch computes both triangles of every n x n product
      fp32_acc.accumulate = Accumulate::fp32;
      const MatD ours_compute = g.run(compute), ours_fp32_acc = g.run(fp32_acc);
      const MatD oracle = g.run(oracle_config(g.cfg)), ours_fp32 = g.run(with_dtype(g.cfg, DType::fp32));
      if (is_zero(oracle)) {
        BOOST_CHECK(is_zero(ours_compute) && is_zero(ours_fp32_acc) && is_zero(g.expected));
        ++checked;
        continue;
      }
      const double vs_compute = rel_diff(ours_compute, g.expected), vs_fp32_acc = rel_diff(ours_fp32_acc, g.expected);
      const double deepspeed_err = rel_diff(g.expected, oracle), fp32_acc_err = rel_diff(ours_fp32_acc, oracle);
      const double scaled_fp32_err = unit_roundoff(DType::bf16) / unit_roundoff(DType::fp32) * rel_diff(ours_fp32, oracle);
      const Tolerance& tol = tolerance(Claim::golden_bf16, g.cfg.kernel, DType::bf16);
      const double bound = tol.bound(0.0, scaled_fp32_err);
      BOOST_TEST_MESSAGE(g.name << ": vs DeepSpeed, accumulate=compute " << vs_compute << ", accumulate=fp32 " << vs_fp32_acc
                                << "; to the fp64 map: DeepSpeed " << deepspeed_err << ", ours (fp32 acc.) " << fp32_acc_err
                                << " (bound " << bound << ")");
      BOOST_CHECK_MESSAGE(fp32_acc_err <= bound,
                          "bf16 with fp32 accumulation is " << fp32_acc_err << " from the float64 map, above " << bound << ": "
                                                            << tol.derivation);
      bit_identical += compare_bits(ours_compute, g.expected, DType::bf16).identical;
      worst_compute = std::max(worst_compute, vs_compute);
      worst_fp32_acc = std::max(worst_fp32_acc, vs_fp32_acc);
      worst_deepspeed = std::max(worst_deepspeed, deepspeed_err);
      ++checked;
    }
  }
  BOOST_TEST_MESSAGE(checked << " bf16 golden cases (" << bit_identical << " bit-identical with accumulate=compute); worst rel. "
                             << "diff to DeepSpeed: accumulate=compute " << worst_compute
                             << ", accumulate=fp32 " << worst_fp32_acc << "; DeepSpeed's bf16 up to " << worst_deepspeed
                             << " from the fp64 map");
  BOOST_CHECK_GT(checked, 0);
}

// The muon_update cases are fixtures for the Muon-step module (SPEC 1.4, properties M); here we
// only check that every file they name is present and readable.
BOOST_AUTO_TEST_CASE(muon_update_fixtures_are_present) {
  int files = 0;
  for (const auto& c : kManifest.at("cases")) {
    if (c["kind"] != "muon_update") continue;
    for (const char* key : {"grad", "update", "momentum_after"}) {
      const Batch b = load(c[key].get<std::string>());
      BOOST_CHECK_EQUAL(b.size(), 1u);
      ++files;
    }
  }
  BOOST_TEST_MESSAGE(files << " muon_update fixture files present (tested by the Muon-step properties)");
  BOOST_CHECK_GT(files, 0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()

}  // namespace nsv::checks
