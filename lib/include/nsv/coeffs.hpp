#pragma once
// Newton-Schulz coefficient schedules as data (SPEC §1.6).
//
// A schedule is a list of (a, b, c) triples and a rule for the steps beyond its last triple:
// `repeat_last` keeps using the last triple (triple min(i, size - 1) at step i), `cycle` starts
// over from the first (triple i mod size), the two modes of Emerging-Optimizers'
// get_coefficient_iterator. A triple with c = 0 is a cubic step, a x + b x^3.
#include <string>
#include <string_view>
#include <vector>

namespace nsv {

struct Coeffs {
  double a, b, c;
};

enum class AfterLast { repeat_last, cycle };
std::string_view after_last_name(AfterLast);

struct CoeffSchedule {
  std::string name;
  std::vector<Coeffs> triples;
  AfterLast after_last = AfterLast::repeat_last;

  const Coeffs& at_step(int step) const;
  // The triples of steps 0 .. steps-1 written out, with repeat_last after them: the same map
  // for those steps, and a schedule whose first triples can be edited one by one.
  CoeffSchedule expanded(int steps) const;
};

// Where a built-in schedule's numbers come from: the publication, and the file, commit and
// lines its triples were transcribed from.
struct ScheduleSource {
  std::string_view emerging_optimizers_name;  // its name in Emerging-Optimizers; empty: none
  std::string_view origin;                    // who published it
  std::string_view file, commit, lines;       // the transcribed lines
  bool safety_factor_applied;                 // the numbers already divided by a safety factor
  int fixed_steps = 0;                        // the source refuses every other step count; 0: any
};

// keller (DeepSpeed/PyTorch/Moonlight; Emerging-Optimizers' "simple"), you (the quintic numbers,
// repeating the last as SPEC §1.6 reads them), and every other set Emerging-Optimizers ships under
// its own name and iteration mode: quintic, polar_express, cans, aol, deepseekv4, cubic5.
CoeffSchedule builtin_schedule(std::string_view name);  // a name or an Emerging-Optimizers name; throws std::invalid_argument
std::vector<std::string> builtin_schedule_names();
ScheduleSource builtin_schedule_source(std::string_view name);  // throws std::invalid_argument

// A user file: one triple per line, "a b c" or "a,b,c"; '#' starts a comment; the last triple
// repeats. Throws std::invalid_argument naming the file and line on anything malformed.
CoeffSchedule load_schedule(const std::string& path);

// A built-in name, or else a path to a user file.
CoeffSchedule resolve_schedule(const std::string& name_or_path);

}  // namespace nsv
