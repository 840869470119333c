#include "nsv/coeffs.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "nsv/input_file.hpp"

namespace nsv {

const Coeffs& CoeffSchedule::at_step(int step) const {
  const auto last = static_cast<int>(triples.size()) - 1;
  return triples[static_cast<std::size_t>(step < last ? step : last)];
}

namespace {

// One record per built-in schedule (SPEC §1.6), the source of its numbers beside it.
struct ScheduleRecord {
  std::string_view name;
  std::vector<Coeffs> triples;
};

const std::vector<ScheduleRecord>& schedule_records() {
  static const std::vector<ScheduleRecord> records = {
      // DeepSpeed, PyTorch, Moonlight: one triple, every step.
      {"keller", {{3.4445, -4.7750, 2.0315}}},
      // Megatron / Emerging-Optimizers' default "quintic".
      {"you",
       {{4.0848, -6.8946, 2.9270},
        {3.9505, -6.3029, 2.6377},
        {3.7418, -5.5913, 2.3037},
        {2.8769, -3.1427, 1.2046},
        {2.8366, -3.0525, 1.2012}}},
      // arXiv 2505.16932, Emerging-Optimizers' 8-step table, the 1.01^degree safety factor applied.
      {"polar_express",
       {{8.2051, -22.9019, 16.4607},
        {4.0664, -2.8612, 0.5184},
        {3.9096, -2.8234, 0.5250},
        {3.2856, -2.4153, 0.4853},
        {2.2779, -1.6198, 0.3985},
        {1.8726, -1.2307, 0.3585},
        {1.8564, -1.2132, 0.3568},
        {1.8750, -1.2500, 0.3750}}},
  };
  return records;
}

}  // namespace

CoeffSchedule builtin_schedule(std::string_view name) {
  for (const auto& r : schedule_records())
    if (r.name == name) return {std::string(r.name), r.triples};
  std::string names;
  for (const auto& r : schedule_records()) names += std::string(r.name) + ", ";
  throw std::invalid_argument("unknown coefficient schedule '" + std::string(name) + "': expected one of " + names +
                              "or a file of 'a b c' lines");
}

std::vector<std::string> builtin_schedule_names() {
  std::vector<std::string> names;
  for (const auto& r : schedule_records()) names.emplace_back(r.name);
  return names;
}

namespace {
constexpr double kMaxCoefficient = 1000;
constexpr std::size_t kMaxTriples = 1000;
}  // namespace

CoeffSchedule load_schedule(const std::string& path) {
  // A regular file only (a FIFO or a folder is refused, never waited on), read whole.
  std::istringstream in;
  try {
    in.str(read_input_file(path, "coefficient file"));
  } catch (const std::runtime_error& e) {  // a bad file is a bad argument, as the other errors here
    throw std::invalid_argument(e.what());
  }
  CoeffSchedule schedule{path, {}};
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    for (char& ch : line)
      if (ch == ',') ch = ' ';
    std::istringstream fields(line);
    Coeffs t{};
    std::string extra;
    if (!(fields >> t.a)) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank
      throw std::invalid_argument(path + ":" + std::to_string(number) +
                                  ": expected three numbers 'a b c'");
    }
    if (!(fields >> t.b >> t.c) || (fields >> extra))
      throw std::invalid_argument(path + ":" + std::to_string(number) +
                                  ": expected exactly three numbers 'a b c'");
    if (!std::isfinite(t.a) || !std::isfinite(t.b) || !std::isfinite(t.c))
      throw std::invalid_argument(path + ":" + std::to_string(number) + ": non-finite coefficient");
    // Every published schedule's coefficients are below 10 in magnitude (the largest is Polar
    // Express's first a = 8.29); one far larger overflows the iterate within a step or two and
    // yields NaN, so it is refused as a typo rather than computed.
    if (std::max({std::abs(t.a), std::abs(t.b), std::abs(t.c)}) > kMaxCoefficient)
      throw std::invalid_argument(path + ":" + std::to_string(number) + ": a coefficient above " +
                                  std::to_string(static_cast<int>(kMaxCoefficient)) + " in magnitude (published schedules stay below 10)");
    if (schedule.triples.size() == kMaxTriples)
      throw std::invalid_argument(path + ": more than " + std::to_string(kMaxTriples) +
                                  " triples (one per step; NS runs at most 1000 steps)");
    schedule.triples.push_back(t);
  }
  if (schedule.triples.empty())
    throw std::invalid_argument("coefficient file '" + path + "' holds no 'a b c' triple");
  return schedule;
}

CoeffSchedule resolve_schedule(const std::string& name_or_path) {
  for (const auto& name : builtin_schedule_names())
    if (name == name_or_path) return builtin_schedule(name);
  if (std::filesystem::exists(name_or_path)) return load_schedule(name_or_path);
  return builtin_schedule(name_or_path);  // throws with the list of valid names
}

}  // namespace nsv
