#pragma once
// The manifest.json of a golden fixture folder (fixtures/golden/<name>/), read once per executable.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace nsv::checks {

inline nlohmann::json read_golden_manifest(const std::filesystem::path& dir) {
  std::ifstream in(dir / "manifest.json");
  if (!in) throw std::runtime_error("cannot open " + (dir / "manifest.json").string());
  return nlohmann::json::parse(in);
}

}  // namespace nsv::checks
