// The gradients-from-training fixtures (fixtures/training, tools/make_grads.py --train) are what
// their descriptions say: every checkpoint training.json lists is a folder whose grads.json
// names exactly the seven Muon matrices of the model it describes, each .npy reads (float16,
// through nsv's own reader, as `nsv step` reads it) with the shape the model gives that matrix
// and the norm the generator recorded, at the training step and layer training.json records.
// No PyTorch: the files are checked as they are.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "nsv/metrics.hpp"
#include "nsv/model.hpp"
#include "nsv/npy.hpp"

namespace nsv::checks {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kTrainingDir = fs::path(NSV_FIXTURES_DIR) / "training";

json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error("cannot open " + p.string());
  return json::parse(in);
}

const json kDescription = read_json(kTrainingDir / "training.json");

// The matrices' shapes as nsv derives them from a grads.json "model" object (the same fields
// engine/src/grads_description.cpp reads).
std::vector<MuonParam> params_of(const json& model) {
  ModelDims d;
  d.name = "training fixture";
  d.hidden = model.at("hidden_size");
  d.heads = model.at("num_attention_heads");
  d.kv_heads = model.at("num_key_value_heads");
  d.head_dim = model.at("head_dim");
  d.intermediate = model.at("intermediate_size");
  d.vocab = model.at("vocab_size");
  d.layers = model.at("num_hidden_layers");
  return llama_layer_params(d);
}

// Python's np.linalg.norm and Eigen's norm() sum the same n squares of float16 values (each
// exact in float64: 22 significand bits) in different orders. Each sum of n non-negative terms
// is within (n - 1) u of the exact sum (u = 2^-53), so the two squared norms differ by at most
// 2 (n - 1) u relative, and the norms (square roots) by at most half that: (n - 1) u, with one
// more u for each square root's own rounding.
double norm_bound(std::size_t n) { return (static_cast<double>(n) + 1.0) * std::ldexp(1.0, -53); }

BOOST_AUTO_TEST_SUITE(training_fixtures)

BOOST_AUTO_TEST_CASE(every_checkpoint_holds_the_matrices_its_description_lists) {
  const json& hyper = kDescription.at("hyper");
  const int steps = hyper.at("steps");
  std::vector<int> dump_at = kDescription.at("dump_at");
  BOOST_REQUIRE(!kDescription.at("models").empty());
  for (const json& m : kDescription.at("models")) {
    const std::string name = m.at("name");
    BOOST_TEST_CONTEXT("model " << name) {
      // A loss for every forward pass, step 0 (at init) to `steps` (after the last update).
      BOOST_CHECK_EQUAL(m.at("loss_per_step").size(), static_cast<std::size_t>(steps) + 1);
      for (const json& e : m.at("eval_loss")) BOOST_CHECK_EQUAL(e.at("step").get<int>() % hyper.at("eval_every").get<int>(), 0);
      std::vector<int> ckpt_steps;
      for (const json& c : m.at("checkpoints")) ckpt_steps.push_back(c.at("step"));
      BOOST_CHECK(ckpt_steps == dump_at);
      for (const json& c : m.at("checkpoints")) {
        const int step = c.at("step");
        const fs::path folder = kTrainingDir / c.at("folder").get<std::string>();
        BOOST_TEST_CONTEXT(folder.string()) {
          const json g = read_json(folder / "grads.json");
          BOOST_CHECK_EQUAL(g.at("training_step").get<int>(), step);
          BOOST_CHECK_EQUAL(g.at("layer").get<int>(), m.at("dumped_layer").get<int>());
          BOOST_CHECK_EQUAL(g.at("model").at("num_hidden_layers").get<int>(), m.at("layers").get<int>());
          BOOST_CHECK_EQUAL(c.at("loss").get<double>(), m.at("loss_per_step").at(static_cast<std::size_t>(step)).get<double>());
          // Exactly the model's seven matrices are described, and exactly those files exist.
          std::set<std::string> described, on_disk;
          for (const auto& [rel, _] : g.at("files").items()) described.insert(rel);
          for (const auto& e : fs::directory_iterator(folder / "step0")) on_disk.insert("step0/" + e.path().filename().string());
          std::set<std::string> expected;
          for (const MuonParam& p : params_of(g.at("model"))) expected.insert("step0/" + p.name + ".npy");
          BOOST_CHECK(described == expected);
          BOOST_CHECK(on_disk == expected);
          for (const MuonParam& p : params_of(g.at("model"))) {
            const std::string rel = "step0/" + p.name + ".npy";
            if (!g.at("files").contains(rel)) continue;
            const json& f = g.at("files").at(rel);
            BOOST_TEST_CONTEXT(rel) {
              const NpyArray a = read_npy((folder / rel).string());
              BOOST_CHECK(a.dtype == DType::fp16);
              BOOST_CHECK_EQUAL(f.at("dtype").get<std::string>(), "float16");
              BOOST_REQUIRE_EQUAL(a.shape.size(), 2u);
              BOOST_CHECK_EQUAL(a.shape[0], p.rows);
              BOOST_CHECK_EQUAL(a.shape[1], p.cols);
              BOOST_CHECK(f.at("shape") == json::array({p.rows, p.cols}));
              const MatD x = a.matrix();
              BOOST_CHECK(all_finite(x));
              const double recorded = f.at("fro_norm"), read = x.norm();
              BOOST_CHECK_MESSAGE(std::abs(read - recorded) <= norm_bound(a.values.size()) * recorded,
                                  rel << ": norm read " << std::hexfloat << read << ", recorded " << recorded);
            }
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace nsv::checks
