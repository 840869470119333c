#include "nsv/coeffs.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "nsv/input_file.hpp"

namespace nsv {

std::string_view after_last_name(AfterLast m) { return m == AfterLast::cycle ? "cycle" : "repeat_last"; }

const Coeffs& CoeffSchedule::at_step(int step) const {
  const auto size = static_cast<int>(triples.size());
  const int at = after_last == AfterLast::cycle ? step % size : std::min(step, size - 1);
  return triples[static_cast<std::size_t>(at)];
}

CoeffSchedule CoeffSchedule::expanded(int steps) const {
  CoeffSchedule out{name, {}, AfterLast::repeat_last};
  for (int s = 0; s < std::max(steps, 1); ++s) out.triples.push_back(at_step(s));
  return out;
}

namespace {

// The coefficient sets, each written once. Emerging-Optimizers' are transcribed from
// NVIDIA-NeMo/Emerging-Optimizers, emerging_optimizers/orthogonalized_optimizers/muon_utils.py at
// commit fd7729267109a8848709e9406bf19e53e970c3f4 (lines beside each set); a verbatim copy of
// those lines is fixtures/schedules/emerging_optimizers_muon_utils.py, which the gate property
// schedules_match_their_cited_source parses independently of this file.
constexpr std::string_view kEoFile = "emerging_optimizers/orthogonalized_optimizers/muon_utils.py";
constexpr std::string_view kEoCommit = "fd7729267109a8848709e9406bf19e53e970c3f4";

// lines 32-34 "simple": Keller Jordan's Muon triple, also DeepSpeed's, PyTorch's and Moonlight's.
const std::vector<Coeffs> kSimple = {{3.4445, -4.7750, 2.0315}};
// lines 35-44 "quintic": You Jiacheng's five triples (modded-nanogpt, train_gpt_medium.py).
const std::vector<Coeffs> kQuintic = {{4.0848, -6.8946, 2.9270},
                                      {3.9505, -6.3029, 2.6377},
                                      {3.7418, -5.5913, 2.3037},
                                      {2.8769, -3.1427, 1.2046},
                                      {2.8366, -3.0525, 1.2012}};
// lines 45-57 "polar_express": arXiv 2505.16932, its division by 1.01^degree included (lines 47-48).
const std::vector<Coeffs> kPolarExpress = {{8.2051, -22.9019, 16.4607}, {4.0664, -2.8612, 0.5184},
                                           {3.9096, -2.8234, 0.5250},   {3.2856, -2.4153, 0.4853},
                                           {2.2779, -1.6198, 0.3985},   {1.8726, -1.2307, 0.3585},
                                           {1.8564, -1.2132, 0.3568},   {1.8750, -1.2500, 0.3750}};
// lines 58-67 "cans": arXiv 2506.10935 (Remez + adaptive interval); no safety factor stated.
const std::vector<Coeffs> kCans = {{8.4703, -25.1081, 18.6293},
                                   {4.1828, -3.1087, 0.5806},
                                   {3.9619, -2.9541, 0.5630},
                                   {3.2866, -2.4647, 0.5074},
                                   {2.2737, -1.6447, 0.4162}};
// lines 68-74 "aol": thib-s/flash-newton-schulz, newton_schulz_triton.py#L511.
const std::vector<Coeffs> kAol = {{4.0098, -7.0585, 2.4635},
                                  {3.4585, -5.5479, 2.5959},
                                  {2.7573, -3.2939, 1.4254},
                                  {2.7215, -3.0494, 1.3169}};
// lines 75-77 "deepseekv4": [simple] * 8 + [(2.0, -1.5, 0.5)] * 2 (DeepSeek-V4 report).
std::vector<Coeffs> deepseek_v4() {
  std::vector<Coeffs> t(8, kSimple.front());
  t.insert(t.end(), 2, Coeffs{2.0, -1.5, 0.5});
  return t;
}
// lines 78-89 "cubic5": arXiv 2606.00371, relaxed cubic steps (c = 0), a fixed five-step schedule
// (Emerging-Optimizers refuses other step counts, lines 233-237; here it cycles, as its iterator would).
const std::vector<Coeffs> kCubic5 = {{3.3656576, -3.3420992, 0.0},
                                     {2.5744352, -1.4957376, 0.0},
                                     {2.5368962, -1.4312570, 0.0},
                                     {2.4418906, -1.2764040, 0.0},
                                     {2.2230472, -0.9630650, 0.0}};

// One record per built-in schedule (SPEC §1.6). The iteration mode of an Emerging-Optimizers set
// is its own (lines 239-240: polar_express, cans and deepseekv4 repeat the last triple, every
// other set cycles). `you` is the quintic numbers as SPEC §1.6 reads them, repeating the last
// triple: beyond five steps it differs from Megatron's, which calls Emerging-Optimizers'
// "quintic" (cycling); `quintic` is that one.
struct ScheduleRecord {
  std::string_view name;
  std::vector<Coeffs> triples;
  AfterLast after_last;
  ScheduleSource source;
};

const std::vector<ScheduleRecord>& schedule_records() {
  using enum AfterLast;
  static const std::vector<ScheduleRecord> records = {
      {"keller", kSimple, repeat_last, {"simple", "Keller Jordan, Muon (2024)", kEoFile, kEoCommit, "32-34", false}},
      {"you", kQuintic, repeat_last, {"", "You Jiacheng, modded-nanogpt; repeating the last triple (SPEC 1.6)", kEoFile, kEoCommit, "39-43", false}},
      {"quintic", kQuintic, cycle, {"quintic", "You Jiacheng, modded-nanogpt", kEoFile, kEoCommit, "35-44", false}},
      {"polar_express", kPolarExpress, repeat_last, {"polar_express", "Amsel et al., arXiv 2505.16932", kEoFile, kEoCommit, "45-57", true}},
      {"cans", kCans, repeat_last, {"cans", "Grishina et al., arXiv 2506.10935", kEoFile, kEoCommit, "58-67", false}},
      {"aol", kAol, cycle, {"aol", "Boissin, flash-newton-schulz", kEoFile, kEoCommit, "68-74", false}},
      {"deepseekv4", deepseek_v4(), repeat_last, {"deepseekv4", "DeepSeek-V4 report", kEoFile, kEoCommit, "75-77", false}},
      {"cubic5", kCubic5, cycle, {"cubic5", "arXiv 2606.00371 (relaxed cubic)", kEoFile, kEoCommit, "78-89", false, 5}},
  };
  return records;
}

const ScheduleRecord* lookup(std::string_view name) {
  for (const auto& r : schedule_records())
    if (r.name == name || (!r.source.emerging_optimizers_name.empty() && r.source.emerging_optimizers_name == name)) return &r;
  return nullptr;
}

const ScheduleRecord& find_record(std::string_view name) {
  if (const ScheduleRecord* r = lookup(name)) return *r;
  std::string names;
  for (const auto& r : schedule_records()) names += std::string(r.name) + ", ";
  throw std::invalid_argument("unknown coefficient schedule '" + std::string(name) + "': expected one of " + names +
                              "simple (= keller), or a file of 'a b c' lines");
}

}  // namespace

CoeffSchedule builtin_schedule(std::string_view name) {
  const ScheduleRecord& r = find_record(name);
  return {std::string(r.name), r.triples, r.after_last};
}

ScheduleSource builtin_schedule_source(std::string_view name) { return find_record(name).source; }

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
  if (lookup(name_or_path) || !std::filesystem::exists(name_or_path))
    return builtin_schedule(name_or_path);  // a built-in name wins over a file of that name; else throws with the valid names
  return load_schedule(name_or_path);
}

}  // namespace nsv
