#include <cstdio>
#include <exception>
#include <string>

#include "cli_common.hpp"
#include "commands.hpp"

namespace {

// CLI11 answers an unknown command with "A subcommand is required": name the word and the commands.
bool is_unknown_command(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return false;
  std::string names;
  for (const CLI::App* c : app.get_subcommands({})) {
    if (c->get_name() == argv[1]) return false;
    names += (names.empty() ? "" : ", ") + c->get_name();
  }
  std::fprintf(stderr, "nsv: error: unknown command '%s'; the commands are %s (nsv --help)\n", argv[1], names.c_str());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "nsv - property-based verification of Muon's Newton-Schulz orthogonalization under tensor "
      "parallelism.\nRun `nsv COMMAND --help` for a command's options."};
  app.require_subcommand(1);
  nsv::cli::add_ns_command(app);
  nsv::cli::add_shard_command(app);
  nsv::cli::add_sweep_command(app);
  nsv::cli::add_step_command(app);
  nsv::cli::add_report_command(app);
  nsv::cli::add_audit_command(app);
  nsv::cli::add_diagnose_command(app);
  nsv::cli::add_check_command(app);
  if (is_unknown_command(app, argc, argv)) return 1;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nsv: error: %s\n", nsv::cli::error_text(e).c_str());
    return 1;
  }
  return 0;
}
