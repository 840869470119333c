#include <cstdio>
#include <exception>

#include "cli_common.hpp"
#include "commands.hpp"
#include "nsv/invalid_field.hpp"

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
  nsv::cli::add_check_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const nsv::InvalidField& e) {
    std::fprintf(stderr, "nsv: error: %s %s\n", nsv::cli::flag_of_field(e.field()).c_str(), e.requirement().c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nsv: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
