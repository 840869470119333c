#pragma once
// Option parsing and output shared by subcommands.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "nsv/kernels.hpp"
#include "nsv/matrix.hpp"
#include "nsv/model.hpp"
#include "nsv/strategies.hpp"

namespace nsv::cli {

struct NsOptions {
  std::string kernel = "gram";
  int steps = 5;
  std::string dtype = "fp32";
  std::string accumulate = "fp32";
  std::string products = "symmetric";
  std::string coeffs = "keller";
  std::string restart_at = "2";  // a restart list (restarts_text)

  void add_to(CLI::App& cmd);
  NsConfig config() const;  // throws std::invalid_argument with a message naming the flag
};

// The built-in schedule names joined by `sep` (the --coeffs help, from the record table).
std::string schedule_choices(const std::string& sep);

// A matrix from --input FILE.npy, or generated from --shape RxC --spectrum S --seed N.
struct MatrixSource {
  std::string input, shape, spectrum = "gaussian";
  std::uint64_t seed = 0;

  void add_to(CLI::App& cmd);
  MatD load() const;
  std::string describe() const;
};

// Refuses (std::invalid_argument naming `what`) a matrix NS cannot orthogonalize meaningfully: one
// holding NaN or Inf, or one whose Frobenius norm overflows the dtype the kernel normalizes in
// (the division by an infinite norm turns the whole result into zeros, as DeepSpeed's kernels do).
void require_normalizable(const MatD&, const NsConfig&, const std::string& what);

// Refuses an output path that is one of the run's inputs (the same file under any name), before
// anything runs: a failed or finished run must never have destroyed its own input.
// inputs: (flag, path) pairs; paths that do not name an existing file are ignored.
void refuse_output_over_inputs(const std::string& output_flag, const std::string& output,
                               const std::vector<std::pair<std::string, std::string>>& inputs);

// "512x1024" -> {512, 1024}; throws std::invalid_argument saying the expected form.
std::pair<std::int64_t, std::int64_t> parse_shape(const std::string&);

// --fused's value: "none", "qkv:KIND" (a fused [Q;K;V], KIND one of glm, qwen, phi3, bloom,
// bigcode) or "gate_up"; throws std::invalid_argument listing them. fused_option_text is its
// inverse (the canonical spelling).
FusedKind parse_fused_option(const std::string&);
std::string fused_option_text(FusedKind);

// Strategy names in record-table order, for CLI::IsMember. `whole_target_only`: only those whose
// target is the whole matrix (what can stand in for per_head where it does not apply).
std::vector<std::string> strategy_choices(bool whole_target_only = false);

// The command-line flag that sets a library field (nsv::InvalidField::field): `tp` -> `--tp`,
// `latency_us` -> `--latency-us`.
std::string flag_of_field(const std::string& field);

void print_rank_table(const Comparison&);

}  // namespace nsv::cli
