#pragma once
// CSV rows (RFC 4180 quoting) and a crash-safe append-only row file.
//
// Crash safety: every row is written with one write(2) of the whole line to a file opened with
// O_APPEND, so it reaches the kernel before the next case starts; a process killed at any point
// (kill -9) leaves whole lines plus at most one partial last line, which read_rows() detects (no
// final newline) and removes.
#include <string>
#include <vector>

namespace nsv::engine {

// The fields joined, each quoted when it holds , " or a newline, with a trailing '\n'.
std::string csv_line(const std::vector<std::string>& fields);
// Splits one line (without its newline); throws std::invalid_argument on an unterminated quote.
std::vector<std::string> csv_split(const std::string& line);

// The complete lines of a file (without newlines). A trailing partial line (no final newline) is
// dropped; with `truncate_partial` the file itself is cut back to its last complete line.
// Returns the number of bytes dropped in `dropped_bytes`.
std::vector<std::string> read_lines(const std::string& path, bool truncate_partial, std::size_t* dropped_bytes = nullptr);

class AppendFile {
 public:
  // Opens for appending; with `truncate` the file is emptied first. Throws std::runtime_error.
  AppendFile(const std::string& path, bool truncate);
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  void append(const std::string& line);  // one write(2) of the whole line (must end in '\n')

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace nsv::engine
