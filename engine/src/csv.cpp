#include "nsv/engine/csv.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
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

std::vector<std::string> read_lines(const std::string& path, bool truncate_partial, std::size_t* dropped_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const std::size_t last_nl = text.rfind('\n');
  const std::size_t complete = last_nl == std::string::npos ? 0 : last_nl + 1;
  if (dropped_bytes) *dropped_bytes = text.size() - complete;
  if (truncate_partial && complete < text.size())
    if (::truncate(path.c_str(), static_cast<off_t>(complete)) != 0)
      throw std::runtime_error("cannot drop the partial last line of " + path + ": " + std::strerror(errno));
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

AppendFile::AppendFile(const std::string& path, bool truncate) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open " + path + " for writing: " + std::strerror(errno));
}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

void AppendFile::append(const std::string& line) {
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("cannot write to " + path_ + ": " + std::strerror(errno));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace nsv::engine
