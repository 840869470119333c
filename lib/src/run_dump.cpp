#include "nsv/run_dump.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <regex>
#include <stdexcept>

#include "nsv/npy.hpp"
#include "nsv/safetensors.hpp"

namespace nsv {
namespace fs = std::filesystem;
namespace {

struct KindWord {
  std::string_view word;
  DumpKind kind;
  bool in_tensor_name;  // `weight` ends every HF name, so it marks a kind only in file names
};
constexpr KindWord kKindWords[] = {{"grad", DumpKind::grad, true},         {"grads", DumpKind::grad, false},
                                   {"momentum", DumpKind::momentum, true}, {"delta", DumpKind::delta, true},
                                   {"weight", DumpKind::weight, false},    {"weights", DumpKind::weight, false}};

std::optional<DumpKind> kind_of_word(std::string_view w, bool in_tensor_name) {
  for (const auto& k : kKindWords)
    if (k.word == w && (k.in_tensor_name || !in_tensor_name)) return k.kind;
  return std::nullopt;
}

std::optional<int> rank_of_word(const std::string& w) {
  static const std::regex rank(R"(rank(\d{1,6}))");
  std::smatch m;
  if (std::regex_match(w, m, rank)) return std::stoi(m[1].str());
  return std::nullopt;
}

std::vector<std::string> tokens(const std::string& s, const std::string& separators) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (separators.find(c) != std::string::npos) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

// Kind and rank read from a list of tokens (a file stem or a folder name): `rank` followed by a
// number token counts as a rank too.
struct Marks {
  std::optional<DumpKind> kind;
  std::optional<int> rank;
};

Marks marks_of(const std::vector<std::string>& words, const std::string& where) {
  Marks m;
  const auto set = [&](auto& slot, auto value, const char* what) {
    if (slot && *slot != value) throw std::runtime_error(where + ": the name gives two different " + what + "s");
    slot = value;
  };
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (const auto k = kind_of_word(words[i], false)) set(m.kind, *k, "kind");
    if (const auto r = rank_of_word(words[i])) set(m.rank, *r, "rank");
    if (words[i] == "rank" && i + 1 < words.size() && !words[i + 1].empty() && words[i + 1].size() <= 6 &&
        std::all_of(words[i + 1].begin(), words[i + 1].end(), [](char c) { return c >= '0' && c <= '9'; }))
      set(m.rank, std::stoi(words[i + 1]), "rank");
  }
  return m;
}

const std::regex& layer_matrix_pattern() {
  static const std::regex p(
      R"((?:^|.*\.)layers\.(\d{1,6})\.(?:(?:self_attn|mlp)\.)?(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)(?:\.weight)?)");
  return p;
}

// What a tensor name says: the canonical matrix name, and the kind and rank of its suffixes.
struct ParsedName {
  std::string param;
  Marks marks;
};

std::optional<ParsedName> parse_tensor_name(const std::string& tensor) {
  std::vector<std::string> words = tokens(tensor, ".");
  ParsedName out;
  if (words.size() > 1)
    if (const auto r = rank_of_word(words.back())) out.marks.rank = *r, words.pop_back();
  if (words.size() > 1)
    if (const auto k = kind_of_word(words.back(), true)) out.marks.kind = *k, words.pop_back();
  std::string param;
  for (const auto& w : words) param += (param.empty() ? "" : ".") + w;
  std::smatch m;
  if (!std::regex_match(param, m, layer_matrix_pattern())) return std::nullopt;
  out.param = canonical_param_name(std::stoll(m[1].str()), m[2].str());
  return out;
}

struct Collector {
  RunDump dump;

  void add(const std::string& file, const std::string& tensor, const ParsedName& name, DType dtype, MatD values,
           const Marks& file_marks) {
    const std::string where = file + ": tensor '" + tensor + "'";
    const auto pick = [&](const auto& from_name, const auto& from_file, const char* what) {
      if (from_name && from_file && *from_name != *from_file)
        throw std::runtime_error(where + ": its name and its file's name give different " + what + "s");
      return from_name ? from_name : from_file;
    };
    const auto kind = pick(name.marks.kind, file_marks.kind, "kind");
    const auto rank = pick(name.marks.rank, file_marks.rank, "rank");
    if (!kind)
      throw std::runtime_error(where + ": no kind: end the tensor name in .grad, .momentum or .delta, or name the file "
                                       "grad, momentum, delta or weight (e.g. grad.rank0.safetensors)");
    if (values.rows() == 0 || values.cols() == 0) throw std::runtime_error(where + ": the matrix is empty");
    DumpKey key{name.param, *kind, rank.value_or(0)};
    const auto [it, inserted] = dump.matrices.emplace(key, DumpedMatrix{file, tensor, dtype, std::move(values)});
    if (!inserted)
      throw std::runtime_error(where + ": the " + std::string(dump_kind_name(key.kind)) + " of " + key.param + " at rank " +
                               std::to_string(key.rank) + " is also given by " + it->second.file + ": tensor '" + it->second.tensor + "'");
  }

  void read_file(const fs::path& p) {
    const std::string file = p.string();
    dump.sources.push_back(file);
    if (p.extension() == ".npy") {
      const std::string tensor = p.stem().string();
      const auto name = parse_tensor_name(tensor);
      if (!name) {
        dump.skipped.push_back(file + ": " + tensor);
        return;
      }
      const NpyArray a = read_npy(file);
      if (a.shape.size() != 2) throw std::runtime_error(file + ": expected a 2-D matrix [out, in]");
      add(file, tensor, *name, a.dtype, a.matrix(),
          marks_of(tokens(p.parent_path().filename().string(), "._-"), file));
      return;
    }
    const SafetensorsFile st = read_safetensors(file);
    const Marks marks = marks_of(tokens(p.stem().string(), "._-"), file);
    for (const Tensor& t : st.tensors) {
      const auto name = parse_tensor_name(t.name);
      if (!name) {
        dump.skipped.push_back(file + ": " + t.name);
        continue;
      }
      if (t.shape.size() != 2) throw std::runtime_error(file + ": tensor '" + t.name + "': a decoder-layer matrix must be 2-D [out, in]");
      add(file, t.name, *name, t.dtype, t.matrix(), marks);
    }
  }
};

}  // namespace

std::string_view dump_kind_name(DumpKind k) {
  switch (k) {
    case DumpKind::grad: return "grad";
    case DumpKind::momentum: return "momentum";
    case DumpKind::delta: return "delta";
    case DumpKind::weight: return "weight";
  }
  return "?";
}

std::string canonical_param_name(std::int64_t layer, std::string_view matrix) {
  const bool attention = matrix == "q_proj" || matrix == "k_proj" || matrix == "v_proj" || matrix == "o_proj";
  return "model.layers." + std::to_string(layer) + (attention ? ".self_attn." : ".mlp.") + std::string(matrix) + ".weight";
}

const DumpedMatrix* RunDump::find(const std::string& param, DumpKind kind, int rank) const {
  const auto it = matrices.find(DumpKey{param, kind, rank});
  return it == matrices.end() ? nullptr : &it->second;
}

int RunDump::max_rank() const {
  int r = -1;
  for (const auto& [key, m] : matrices) r = std::max(r, key.rank);
  return r;
}

RunDump load_run_dump(const std::vector<std::string>& paths) {
  Collector c;
  for (const std::string& path : paths) {
    const fs::path p(path);
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(p))
        if (e.is_regular_file() && (e.path().extension() == ".safetensors" || e.path().extension() == ".npy")) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      if (files.empty()) throw std::runtime_error(path + ": the folder holds no .safetensors or .npy file");
      for (const auto& f : files) c.read_file(f);
    } else if (p.extension() == ".safetensors" || p.extension() == ".npy") {
      c.read_file(p);
    } else {
      throw std::runtime_error(path + ": expected a .safetensors file, a .npy file or a folder of them");
    }
  }
  return std::move(c.dump);
}

}  // namespace nsv
