#pragma once
// Option parsing and output shared by subcommands.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "nsv/kernels.hpp"
#include "nsv/matrix.hpp"
#include "nsv/strategies.hpp"

namespace nsv::cli {

struct NsOptions {
  std::string kernel = "gram";
  int steps = 5;
  std::string dtype = "fp32";
  std::string accumulate = "fp32";
  std::string products = "symmetric";
  std::string coeffs = "keller";
  int restart_at = 2;

  void add_to(CLI::App& cmd);
  NsConfig config() const;  // throws std::invalid_argument with a message naming the flag
};

// A matrix from --input FILE.npy, or generated from --shape RxC --spectrum S --seed N.
struct MatrixSource {
  std::string input, shape, spectrum = "gaussian";
  std::uint64_t seed = 0;

  void add_to(CLI::App& cmd);
  MatD load() const;
  std::string describe() const;
};

// "512x1024" -> {512, 1024}; throws std::invalid_argument saying the expected form.
std::pair<std::int64_t, std::int64_t> parse_shape(const std::string&);

// Heads along the split axis: head_dim = dim / heads, KV groups default to the heads.
struct HeadGeometry {
  std::int64_t heads = 0, kv_groups = 0, head_dim = 0;
};
HeadGeometry head_geometry(std::int64_t dim, std::int64_t heads, std::int64_t kv_heads, int axis);

// The command-line flag that sets a library field (nsv::InvalidField::field): `tp` -> `--tp`,
// `latency_us` -> `--latency-us`.
std::string flag_of_field(const std::string& field);

nlohmann::json comparison_json(const Comparison&);
void print_rank_table(const Comparison&);

}  // namespace nsv::cli
