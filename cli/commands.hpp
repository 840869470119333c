#pragma once
// Each `nsv` subcommand registers itself on the app; main() only dispatches and turns
// exceptions into a message and a non-zero exit.
#include <CLI/CLI.hpp>

namespace nsv::cli {

void add_ns_command(CLI::App& app);
void add_shard_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_step_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_audit_command(CLI::App& app);
void add_diagnose_command(CLI::App& app);
void add_check_command(CLI::App& app);  // the nsverify Python package's checks

}  // namespace nsv::cli
