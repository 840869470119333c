#include "nsv/engine/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace nsv::engine {
namespace {

std::string clock_text(double seconds) {
  if (!(seconds >= 0) || seconds > 359999) return "--:--";
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

}  // namespace

bool Progress::stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

Progress::Progress(std::string label, std::size_t total, bool enabled)
    : label_(std::move(label)), total_(total), enabled_(enabled && stderr_is_terminal()),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {
  draw(true);
}

Progress::~Progress() { finish(); }

void Progress::advance(std::size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_ += n;
  draw(false);
}

void Progress::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  draw(true);
  if (enabled_) std::fputc('\n', stderr);
  finished_ = true;
}

void Progress::draw(bool force) {
  if (!enabled_ || finished_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(200) && done_ != total_) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? done_ / elapsed : 0.0;
  const double eta = rate > 0 ? (total_ - done_) / rate : -1.0;
  constexpr int width = 30;
  const int filled = total_ > 0 ? static_cast<int>(width * done_ / total_) : width;
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(width, '.');
  std::fprintf(stderr, "\r%s [%s] %zu/%zu  %.1f/s  elapsed %s  ETA %s \033[K", label_.c_str(), bar.c_str(), done_, total_,
               rate, clock_text(elapsed).c_str(), done_ == total_ ? "0:00" : clock_text(eta).c_str());
  std::fflush(stderr);
}

}  // namespace nsv::engine
