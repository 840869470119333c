#include "nsv/engine/csv.hpp"

#include <cstdint>
#include <stdexcept>

namespace nsv::engine {
namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + '"';
}

}  // namespace

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) line += ',';
    line += csv_field(fields[i]);
  }
  return line + '\n';
}

std::vector<std::string> csv_split(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          cur += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (quoted) throw std::invalid_argument("unterminated quote in CSV line: " + line);
  out.push_back(std::move(cur));
  return out;
}

std::vector<std::string> read_lines(const std::string& path, std::size_t* dropped_bytes, FileRole role) {
  // A sweep CSV holds at most 1,000,000 rows of a few hundred bytes.
  const std::string text = read_input_file(path, "CSV file", std::uint64_t{1} << 32, role);
  const std::size_t last_nl = text.rfind('\n');
  const std::size_t complete = last_nl == std::string::npos ? 0 : last_nl + 1;
  if (dropped_bytes) *dropped_bytes = text.size() - complete;
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at < complete) {
    const std::size_t nl = text.find('\n', at);
    std::string l = text.substr(at, nl - at);
    if (!l.empty() && l.back() == '\r') l.pop_back();
    lines.push_back(std::move(l));
    at = nl + 1;
  }
  return lines;
}

}  // namespace nsv::engine
