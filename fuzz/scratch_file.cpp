#include "scratch_file.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace nsv::fuzz {

std::string write_scratch(const std::string& name, const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    auto d = std::filesystem::path(tmp ? tmp : "/tmp") / ("nsv-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  const std::string path = (dir / name).string();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::logic_error("cannot write the scratch file " + path);  // the harness's own failure: abort
  if (size > 0 && std::fwrite(data, 1, size, f) != size) throw std::logic_error("short write to " + path);
  std::fclose(f);
  return path;
}

}  // namespace nsv::fuzz
