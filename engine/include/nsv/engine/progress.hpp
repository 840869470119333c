#pragma once
// A progress bar on stderr for long-running work: items done / total, rate and ETA. It draws only
// when stderr is a terminal and the user did not ask for --quiet, redraws at most every 200 ms,
// and is safe to advance from several threads.
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace nsv::engine {

class Progress {
 public:
  // `enabled` is ANDed with "stderr is a terminal".
  Progress(std::string label, std::size_t total, bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void advance(std::size_t n = 1);
  void finish();  // final redraw and a newline (idempotent)

  static bool stderr_is_terminal();

 private:
  void draw(bool force);

  std::string label_;
  std::size_t total_, done_ = 0;
  bool enabled_, finished_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
  std::mutex mutex_;
};

}  // namespace nsv::engine
