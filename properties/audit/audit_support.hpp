#pragma once
// Shared by the audit properties: the bundled model configs, scratch files and running the CLI.
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace nsv::audit_props {

inline std::string models_dir() { return NSV_MODELS_DIR; }
inline std::string model_path(const std::string& stem) { return models_dir() + "/" + stem + ".json"; }

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

// A scratch directory for this process, removed at exit.
inline const std::filesystem::path& scratch_dir() {
  struct Dir {
    std::filesystem::path path;
    Dir() {
      path = std::filesystem::temp_directory_path() / ("nsv-audit-props-" + std::to_string(::getpid()));
      std::filesystem::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static Dir dir;
  return dir.path;
}

inline std::string write_scratch(const std::string& name, const std::string& text) {
  const auto path = scratch_dir() / name;
  std::ofstream(path) << text;
  return path.string();
}

struct CliResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs the nsv binary built alongside (NSV_CLI) with `args` (shell-quoted by the caller).
inline CliResult run_cli(const std::string& args) {
  const std::string command = std::string("'") + NSV_CLI + "' " + args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed: " + command);
  CliResult r;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline std::string quoted(const std::string& s) { return "'" + s + "'"; }

}  // namespace nsv::audit_props
