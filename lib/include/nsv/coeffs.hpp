#pragma once
// Newton-Schulz coefficient schedules as data (SPEC §1.6).
//
// A schedule is a list of (a, b, c) triples; step i uses triple min(i, size-1), so a schedule
// "repeats its last triple" for any number of steps.
#include <string>
#include <string_view>
#include <vector>

namespace nsv {

struct Coeffs {
  double a, b, c;
};

struct CoeffSchedule {
  std::string name;
  std::vector<Coeffs> triples;

  const Coeffs& at_step(int step) const;
};

// keller (DeepSpeed/PyTorch/Moonlight), you (Megatron quintic), polar_express (8 steps, with
// the 1.01^deg safety factor already applied).
CoeffSchedule builtin_schedule(std::string_view name);  // throws std::invalid_argument
std::vector<std::string> builtin_schedule_names();

// A user file: one triple per line, "a b c" or "a,b,c"; '#' starts a comment. Throws
// std::invalid_argument naming the file and line on anything malformed.
CoeffSchedule load_schedule(const std::string& path);

// A built-in name, or else a path to a user file.
CoeffSchedule resolve_schedule(const std::string& name_or_path);

}  // namespace nsv
