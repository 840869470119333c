#pragma once
// Option parsing and output shared by subcommands.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "nsv/config_schema.hpp"
#include "nsv/kernels.hpp"
#include "nsv/matrix.hpp"
#include "nsv/strategies.hpp"

namespace nsv::cli {

// The NS knobs, one flag per NsConfig field: their defaults are NsConfig{}'s (or a library
// default of the command's, AuditOptions{}.ns), their choices the schema's tables
// (nsv/config_schema.hpp).
struct NsOptions : NsConfigNames {
  explicit NsOptions(const NsConfig& defaults = NsConfig{}) : NsConfigNames(ns_config_names(defaults)) {}
  void add_to(CLI::App& cmd);
  // ns_config_from_names: throws std::invalid_argument (InvalidField naming the field at fault).
  NsConfig config() const { return ns_config_from_names(*this); }
};

// The built-in schedule names joined by `sep` (the --coeffs help, from the record table).
std::string schedule_choices(const std::string& sep);

// A matrix from --input FILE.npy, or generated from --shape RxC --spectrum S --seed N; its shape
// checked by the library's input limits (nsv/input_limits.hpp) before it is read or generated.
struct MatrixSource {
  std::string input, shape, spectrum = "gaussian";
  std::uint64_t seed = 0;

  void add_to(CLI::App& cmd);
  MatD load() const;
  std::string describe() const;
};

// Refuses an output path that is one of the run's inputs (the same file under any name), before
// anything runs: a failed or finished run must never have destroyed its own input.
// inputs: (flag, path) pairs; paths that do not name an existing file are ignored.
void refuse_output_over_inputs(const std::string& output_flag, const std::string& output,
                               const std::vector<std::pair<std::string, std::string>>& inputs);

// The strategies whose target is the whole matrix, in record-table order, for CLI::IsMember
// (what can stand in for per_head where it does not apply).
std::vector<std::string> whole_target_strategies();

// The command-line flag that sets a library field (nsv::InvalidField::field): `tp` -> `--tp`,
// `latency_us` -> `--latency-us`.
std::string flag_of_field(const std::string& field);
// An error as nsv words it: an InvalidField as its field's flag and the requirement ("--tp must be
// at least 1, got 0"), anything else as what() says.
std::string error_text(const std::exception&);

void print_rank_table(const Comparison&);

}  // namespace nsv::cli
