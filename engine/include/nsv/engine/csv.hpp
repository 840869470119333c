#pragma once
// CSV rows (RFC 4180 quoting) and a crash-safe append-only row file.
//
// Crash safety: every row is written with one write(2) of the whole line to a file opened with
// O_APPEND, so it reaches the kernel before the next case starts; a process killed at any point
// (kill -9) leaves whole lines plus at most one partial last line, which read_rows() detects (no
// final newline) and removes.
#include <string>
#include <vector>

#include "nsv/input_file.hpp"
#include "nsv/output_file.hpp"

namespace nsv::engine {

// The fields joined, each quoted when it holds , " or a newline, with a trailing '\n'.
std::string csv_line(const std::vector<std::string>& fields);
// Splits one line (without its newline); throws std::invalid_argument on an unterminated quote.
std::vector<std::string> csv_split(const std::string& line);

// The complete lines of a file (without newlines), read as `role` (nsv/input_file.hpp: a regular
// file only, never blocking on a FIFO). A trailing partial line (no final newline) is dropped;
// its byte count goes to `dropped_bytes`.
std::vector<std::string> read_lines(const std::string& path, std::size_t* dropped_bytes = nullptr,
                                    FileRole role = FileRole::run_input);

// The append-only row file is nsv::AppendFile (nsv/output_file.hpp): O_APPEND, never through a
// symlink, never a FIFO.
using nsv::AppendFile;

}  // namespace nsv::engine
