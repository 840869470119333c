#pragma once
// Option parsing and output shared by subcommands.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

// Strategy names in record-table order, for CLI::IsMember. `whole_target_only`: only those whose
// target is the whole matrix (what can stand in for per_head where it does not apply).
std::vector<std::string> strategy_choices(bool whole_target_only = false);

// The command-line flag that sets a library field (nsv::InvalidField::field): `tp` -> `--tp`,
// `latency_us` -> `--latency-us`.
std::string flag_of_field(const std::string& field);

nlohmann::json comparison_json(const Comparison&);
void print_rank_table(const Comparison&);

}  // namespace nsv::cli
