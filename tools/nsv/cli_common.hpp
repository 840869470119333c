#pragma once
// Option parsing shared by subcommands: the NS configuration flags and their validation.
#include <CLI/CLI.hpp>
#include <string>

#include "nsv/kernels.hpp"

namespace nsv::cli {

struct NsOptions {
  std::string kernel = "gram";
  int steps = 5;
  std::string dtype = "fp32";
  std::string accumulate = "fp32";
  std::string coeffs = "keller";
  int restart_at = 2;

  void add_to(CLI::App& cmd);
  NsConfig config() const;  // throws std::invalid_argument with a message naming the flag
};

}  // namespace nsv::cli
