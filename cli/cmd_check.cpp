// nsv check: the nsverify Python package's checks of a user's implementation (check_kernel,
// check_tp) from the command line. The implementation is Python, so the command is the package's
// front end (python/nsverify/cli.py), run by the interpreter the package was built for; its
// options and --help are that front end's.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.hpp"

namespace nsv::cli {
namespace {

[[noreturn]] void run_python_front_end(const std::vector<std::string>& args) {
  const char* old = std::getenv("PYTHONPATH");
  const std::string path = std::string(NSV_PYTHON_DIR) + (old && *old ? std::string(":") + old : std::string());
  setenv("PYTHONPATH", path.c_str(), 1);
  std::vector<std::string> words = {NSV_PYTHON_EXECUTABLE, "-m", "nsverify.cli"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  execv(NSV_PYTHON_EXECUTABLE, argv.data());
  throw std::runtime_error(std::string("cannot run ") + NSV_PYTHON_EXECUTABLE + " for the nsverify package: " +
                           std::strerror(errno));
}

}  // namespace

void add_check_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "check",
      "Run nsverify's properties on YOUR implementation: --impl FILE.py:FUNCTION --kind kernel|tp "
      "[--claim exact|rounding|none] [--json]; exit 0 only if every required property holds "
      "(`nsv check --help` for every option)");
  cmd->prefix_command();   // every argument goes to the Python front end, unparsed
  cmd->set_help_flag();    // --help too
  cmd->callback([cmd] { run_python_front_end(cmd->remaining()); });
}

}  // namespace nsv::cli
