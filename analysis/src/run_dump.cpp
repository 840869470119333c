#include "nsv/analysis/run_dump.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <map>
#include <memory>
#include <stdexcept>

#include "nsv/invalid_field.hpp"
#include "nsv/layout.hpp"
#include "nsv/analysis/model_config.hpp"
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

bool all_digits(const std::string& w, std::size_t max_len) {
  return !w.empty() && w.size() <= max_len && std::all_of(w.begin(), w.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Names come from hostile files: read by hand (std::regex recurses per character and can
// overflow the stack on a long name).
std::optional<int> rank_of_word(const std::string& w) {
  if (w.size() > 4 && w.compare(0, 4, "rank") == 0 && all_digits(w.substr(4), 6)) return std::stoi(w.substr(4));
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
    if (words[i] == "rank" && i + 1 < words.size() && all_digits(words[i + 1], 6)) set(m.rank, std::stoi(words[i + 1]), "rank");
  }
  return m;
}

std::string shape_text(std::int64_t rows, std::int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

// The model's Muon matrices by the names a dump gives them: `layers.L.` (or GPT-style `h.L.`),
// then any prefix and the family record's name, `.E.` after `experts` for a routed expert.
class NameIndex {
 public:
  NameIndex(const ModelConfig& model, int tp) : model_(model), tp_(tp) {
    for (const MuonParam& p : model.layer_params()) family_.push_back({p, tokens(p.name, ".")});
    for (const DumpedParam& d : dump_params(model)) by_name_.emplace(d.name, d.param);
  }

  // The canonical name a tensor name (without kind and rank suffixes) stands for; nullopt for a
  // tensor that is not a decoder-layer matrix of the family (embeddings, norms, lm_head).
  std::optional<std::string> canonical(const std::vector<std::string>& words) const {
    std::size_t at = 0;
    while (at + 1 < words.size() && !((words[at] == "layers" || words[at] == "h") && all_digits(words[at + 1], 6))) ++at;
    if (at + 1 >= words.size()) return std::nullopt;
    const std::int64_t layer = std::stoll(words[at + 1]);
    std::vector<std::string> rest(words.begin() + static_cast<std::ptrdiff_t>(at) + 2, words.end());
    if (!rest.empty() && rest.back() == "weight") rest.pop_back();
    const Family* best = nullptr;
    std::int64_t expert = -1;
    for (const Family& f : family_) {
      std::int64_t e = -1;
      if (!matches(f, rest, e) || (best && best->words.size() >= f.words.size())) continue;
      best = &f;
      expert = e;
    }
    if (!best) return std::nullopt;
    return canonical_param_name(layer, best->param.name, expert);
  }

  // The model's matrix of that canonical name; throws naming the file and tensor when the model
  // has none (a layer or an expert past its count).
  const MuonParam& param(const std::string& name, const std::string& where) const {
    const auto it = by_name_.find(name);
    if (it == by_name_.end())
      throw std::runtime_error(where + " is " + name + ", which the model (" + model_.dims.name + ", " +
                               std::to_string(model_.dims.layers) + " layer(s)) does not have");
    return it->second;
  }

  void check_rank(const std::string& where, int rank) const {
    if (rank >= tp_)
      throw std::runtime_error(where + ": the dump holds tensors of rank " + std::to_string(rank) + ", but tp = " + std::to_string(tp_) +
                               " has ranks 0.." + std::to_string(tp_ - 1) + (tp_ == 1 ? " (the reference is the tp = 1 run)" : ""));
  }

  // Refuses a rank past tp and a shape other than the rank's shard of p under AutoTP's layout.
  void check(const std::string& where, const std::string& name, const MuonParam& p, int rank, const std::vector<std::int64_t>& shape) const {
    check_rank(where, rank);
    if (shape.size() != 2) throw std::runtime_error(where + ": a decoder-layer matrix must be 2-D [out, in]");
    const Layout layout = autotp_layout(p, tp_);
    const std::int64_t w = layout.width(rank);
    const std::int64_t rows = layout.axis == 0 ? w : p.rows, cols = layout.axis == 0 ? p.cols : w;
    if (shape[0] != rows || shape[1] != cols)
      throw std::runtime_error(
          where + " is " + shape_text(shape[0], shape[1]) + ", but " +
          (tp_ == 1 ? name + " of this model is " + shape_text(p.rows, p.cols) + " (the reference is the tp = 1 run)"
                    : "rank " + std::to_string(rank) + "'s shard of " + name + " (" + shape_text(p.rows, p.cols) + ") at tp = " +
                          std::to_string(tp_) + " is " + shape_text(rows, cols) + " under AutoTP's layout (split on dim " +
                          std::to_string(layout.axis) + ")"));
    if (rows == 0 || cols == 0) throw std::runtime_error(where + ": the matrix is empty");
  }

 private:
  struct Family {
    MuonParam param;
    std::vector<std::string> words;  // its name's tokens: {"experts", "w1"}, {"attn", "c_attn"}
  };

  // Whether `rest` ends in the family name's tokens (a routed expert's with its index after
  // "experts"); `expert` gets that index.
  static bool matches(const Family& f, const std::vector<std::string>& rest, std::int64_t& expert) {
    std::vector<std::string> want = f.words;
    if (f.param.expert) {
      const auto it = std::find(want.begin(), want.end(), "experts");
      if (it == want.end()) return false;
      const auto tail = static_cast<std::size_t>(want.end() - it);  // "experts" and what follows it
      if (rest.size() < tail + 1) return false;
      const std::string& index = rest[rest.size() - tail];
      if (!all_digits(index, 6)) return false;
      expert = std::stoll(index);
      want.insert(it + 1, index);
    }
    return rest.size() >= want.size() && std::equal(want.rbegin(), want.rend(), rest.rbegin());
  }

  const ModelConfig& model_;
  int tp_;
  std::vector<Family> family_;
  std::map<std::string, MuonParam> by_name_;
};

struct Collector {
  const NameIndex& names;
  RunDump dump;

  // The key of a tensor, its name and its file's marks agreeing; nullopt when it is not a Muon matrix.
  std::optional<DumpKey> key_of(const std::string& where, const std::string& tensor, const Marks& file_marks) const {
    std::vector<std::string> words = tokens(tensor, ".");
    Marks marks;
    if (words.size() > 1)
      if (const auto r = rank_of_word(words.back())) marks.rank = *r, words.pop_back();
    if (words.size() > 1)
      if (const auto k = kind_of_word(words.back(), true)) marks.kind = *k, words.pop_back();
    const auto param = names.canonical(words);
    if (!param) return std::nullopt;
    const auto pick = [&](const auto& from_name, const auto& from_file, const char* what) {
      if (from_name && from_file && *from_name != *from_file)
        throw std::runtime_error(where + ": its name and its file's name give different " + what + "s");
      return from_name ? from_name : from_file;
    };
    const auto kind = pick(marks.kind, file_marks.kind, "kind");
    const auto rank = pick(marks.rank, file_marks.rank, "rank");
    if (!kind)
      throw std::runtime_error(where + ": no kind: end the tensor name in .grad, .momentum or .delta, or name the file "
                                       "grad, momentum, delta or weight (e.g. grad.rank0.safetensors)");
    return DumpKey{*param, *kind, rank.value_or(0)};
  }

  // One tensor of the dump, known from its file's header: checked before any data is read.
  struct Pending {
    std::string file, tensor, where;
    DumpKey key;
    std::vector<std::int64_t> shape;
    const SafetensorsReader* reader = nullptr;  // null: a .npy file
    SafetensorsEntry entry;
  };
  std::vector<Pending> pending;
  std::vector<std::unique_ptr<SafetensorsReader>> readers;

  void add(const std::string& file, const std::string& tensor, const Marks& marks, std::vector<std::int64_t> shape,
           const SafetensorsReader* reader, const SafetensorsEntry& entry) {
    const std::string where = file + ": tensor '" + tensor + "'";
    const auto key = key_of(where, tensor, marks);
    if (!key) {
      dump.skipped.push_back(file + ": " + tensor);
      return;
    }
    pending.push_back({file, tensor, where, *key, std::move(shape), reader, entry});
  }

  // Pass 1: every header (names, ranks, shapes; no data).
  void read_header(const fs::path& p) {
    const std::string file = p.string();
    dump.sources.push_back(file);
    if (p.extension() == ".npy") {
      const NpyArray header = read_npy_header(file);
      add(file, p.stem().string(), marks_of(tokens(p.parent_path().filename().string(), "._-"), file),
          std::vector<std::int64_t>(header.shape.begin(), header.shape.end()), nullptr, {});
      return;
    }
    readers.push_back(std::make_unique<SafetensorsReader>(file));
    const Marks marks = marks_of(tokens(p.stem().string(), "._-"), file);
    for (const SafetensorsEntry& e : readers.back()->index().entries) add(file, e.name, marks, e.shape, readers.back().get(), e);
  }

  // Pass 2: every check against the model, the run's largest rank first (a dump of another tp
  // is told as such, not as a wrong shape); pass 3: the data, tensor by tensor.
  void read_data() {
    const Pending* highest = nullptr;
    for (const Pending& t : pending)
      if (!highest || t.key.rank > highest->key.rank) highest = &t;
    for (const Pending* t : {highest})
      if (t) names.check_rank(t->where, t->key.rank);
    for (const Pending& t : pending) {
      names.check(t.where, t.key.param, names.param(t.key.param, t.where), t.key.rank, t.shape);
      if (const auto it = dump.matrices.find(t.key); it != dump.matrices.end())
        throw std::runtime_error(t.where + ": the " + std::string(dump_kind_name(t.key.kind)) + " of " + t.key.param + " at rank " +
                                 std::to_string(t.key.rank) + " is also given by " + it->second.file + ": tensor '" + it->second.tensor + "'");
      dump.matrices.emplace(t.key, DumpedMatrix{t.file, t.tensor, t.entry.dtype, MatD()});
    }
    for (const Pending& t : pending) {
      DumpedMatrix& m = dump.matrices.at(t.key);
      if (t.reader) {
        m.values = t.reader->read(t.entry).matrix();
      } else {
        NpyArray a = read_npy(t.file, [&](const std::vector<long>& shape) {  // again: the file may have changed
          names.check(t.where, t.key.param, names.param(t.key.param, t.where), t.key.rank, std::vector<std::int64_t>(shape.begin(), shape.end()));
        });
        m.dtype = a.dtype;
        m.values = a.matrix();
      }
    }
  }
};

// The .safetensors and .npy files directly in `folder`, sorted (the order of reading).
std::vector<fs::path> dump_files_in(const fs::path& folder) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(folder))
    if (e.is_regular_file() && (e.path().extension() == ".safetensors" || e.path().extension() == ".npy")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

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

std::string canonical_param_name(std::int64_t layer, std::string_view matrix, std::int64_t expert) {
  static constexpr std::string_view kAttention[] = {"q_proj", "k_proj", "v_proj", "o_proj", "qkv_proj"};
  static constexpr std::string_view kMlp[] = {"gate_proj", "up_proj", "down_proj", "gate_up_proj"};
  const auto in = [&](const auto& names) { return std::find(std::begin(names), std::end(names), matrix) != std::end(names); };
  std::string name(matrix);
  if (expert >= 0)
    if (const auto at = name.find("experts."); at != std::string::npos) name.insert(at + 8, std::to_string(expert) + ".");
  const std::string_view group = in(kAttention) ? "self_attn." : in(kMlp) ? "mlp." : "";
  return "model.layers." + std::to_string(layer) + "." + std::string(group) + name + ".weight";
}

std::vector<DumpedParam> dump_params(const ModelConfig& model) {
  std::vector<DumpedParam> out;
  const std::vector<MuonParam> family = model.layer_params();
  for (std::int64_t layer = 0; layer < model.dims.layers; ++layer)
    for (const MuonParam& p : family)
      for (std::int64_t e = 0; e < (p.expert ? p.copies : 1); ++e)
        out.push_back({canonical_param_name(layer, p.name, p.expert ? e : -1), layer, p});
  return out;
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

RunDump load_run_dump(const std::vector<std::string>& paths, const ModelConfig& model, int tp) {
  if (tp < 1) throw InvalidField("tp", "must be at least 1, got " + std::to_string(tp));
  const NameIndex names(model, tp);
  Collector c{names, {}, {}, {}};
  for (const std::string& path : paths) {
    const fs::path p(path);
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> files = dump_files_in(p);
      // The README's numpy snippet writes dump/KIND.rankR/NAME.npy: a folder without dump files
      // of its own stands for those of its subfolders (one level, where KIND and R are named).
      if (files.empty())
        for (const auto& e : fs::directory_iterator(p))
          if (e.is_directory() && !e.is_symlink())
            for (fs::path f : dump_files_in(e.path())) files.push_back(std::move(f));
      std::sort(files.begin(), files.end());  // the order of reading, whatever the directory's
      if (files.empty())
        throw std::runtime_error(path + ": the folder holds no .safetensors or .npy file, neither directly nor in a subfolder");
      for (const auto& f : files) c.read_header(f);
    } else if (p.extension() == ".safetensors" || p.extension() == ".npy") {
      c.read_header(p);
    } else {
      throw std::runtime_error(path + ": expected a .safetensors file, a .npy file or a folder of them");
    }
  }
  c.read_data();
  return std::move(c.dump);
}

}  // namespace nsv
