#include "nsv/engine/sweep_resume.hpp"

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <unordered_map>

#include "nsv/npy.hpp"

namespace nsv::engine {
namespace {

const std::string& header_line() {
  static const std::string line = csv_line(sweep_header());
  return line;
}

// Reads every row of an earlier run into the cases of `out.rows` still empty (a row already there
// is kept); returns false when the file is empty.
bool read_earlier_rows(const std::string& path, const SweepPlan& plan, SweepFile& out) {
  const auto lines = read_lines(path, &out.dropped_partial_bytes, FileRole::earlier_output);
  if (lines.empty()) return false;
  if (lines[0] + "\n" != header_line())
    throw std::invalid_argument(path + " does not start with this version's sweep header; it was not written by "
                                "`nsv sweep` (or by another version). Use another --out, or drop --resume to overwrite it.");
  std::unordered_map<std::string, std::size_t> index_of;
  for (const auto& c : plan.cases) index_of[c.key()] = c.index;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string where = path + " line " + std::to_string(i + 1);
    const auto fields = csv_split(lines[i]);
    if (fields.size() != sweep_header().size())
      throw std::invalid_argument(where + " has " + std::to_string(fields.size()) + " fields, expected " +
                                  std::to_string(sweep_header().size()) + "; the file is damaged");
    SweepRow row;
    try {
      row = decode_sweep_row(fields);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(where + ": " + e.what() + "; the file is damaged");
    }
    const std::string key = sweep_row_key(row);
    const auto it = index_of.find(key);
    if (it == index_of.end())
      throw std::invalid_argument(where + " is a case this sweep does not contain (" + key +
                                  "): resume the sweep with the same parameters, or write to another --out");
    auto& slot = out.rows[it->second];
    if (!slot) {  // a case the file holds twice keeps its first row
      slot = std::move(row);
      ++out.resumed;
    }
  }
  return true;
}

}  // namespace

std::string sweep_csv_line(const SweepRow& row) { return csv_line(encode_sweep_row(row)); }

std::string partial_sweep_path(const std::string& out) { return out + ".partial"; }

SweepFile open_sweep_file(const std::string& out, bool resume, const SweepPlan& plan) {
  SweepFile result;
  result.rows.resize(plan.cases.size());
  const std::string partial = partial_sweep_path(out);
  // Anything at the path, a dangling symlink or a FIFO included: each is then read as an earlier
  // output (a regular file, never through a symlink, never blocking), or refused.
  const auto occupied = [](const std::string& p) {
    std::error_code ec;
    return std::filesystem::exists(std::filesystem::symlink_status(p, ec));
  };
  bool fresh = true;
  std::uint64_t partial_kept = 0;
  if (resume) {
    // OUT is only ever written whole (finish_sweep_file), so only OUT.partial can end in a torn
    // line; rows of OUT come first, OUT.partial fills the cases OUT lacks (read_earlier_rows
    // never replaces a row it already holds).
    if (occupied(out)) read_earlier_rows(out, plan, result);
    result.dropped_partial_bytes = 0;
    if (occupied(partial)) {
      fresh = !read_earlier_rows(partial, plan, result);
      partial_kept = std::filesystem::file_size(partial) - result.dropped_partial_bytes;
    }
  }
  result.file = std::make_unique<AppendFile>(partial, fresh);
  if (result.dropped_partial_bytes > 0) result.file->cut_to(partial_kept);  // the torn last line
  if (fresh) result.file->append(header_line());
  return result;
}

void finish_sweep_file(const std::string& out, const std::vector<SweepRow>& rows) {
  std::string text = header_line();
  for (const auto& r : rows) text += sweep_csv_line(r);
  write_file_atomically(out, text);
  std::filesystem::remove(partial_sweep_path(out));
}

}  // namespace nsv::engine
