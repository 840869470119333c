#include "check_record.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "nsv/coeffs.hpp"
#include "nsv/invalid_field.hpp"
#include "nsv/mesh.hpp"

namespace nsv::checks {

namespace {
constexpr NamedValue<TpClaim> kClaimNames[] = {
    {TpClaim::exact, "exact", "bit-identical to the whole matrix on one rank"},
    {TpClaim::rounding, "rounding", "within the derived rounding bound of the target"},
    {TpClaim::none, "none", "no claim: the diagnosis only"},
};
constexpr NameTable<TpClaim> kClaimTable{"claim", kClaimNames};
constexpr NamedValue<KernelPromise> kPromiseNames[] = {
    {KernelPromise::map, "map", "the right function within derived bounds"},
    {KernelPromise::bitwise, "bitwise", "and reproducible bits"},
};
constexpr NameTable<KernelPromise> kPromiseTable{"promise", kPromiseNames};
}  // namespace

const NameTable<TpClaim>& name_table(std::type_identity<TpClaim>) { return kClaimTable; }
const NameTable<KernelPromise>& name_table(std::type_identity<KernelPromise>) { return kPromiseTable; }

std::string_view field_type_name(FieldType t) {
  switch (t) {
    case FieldType::integer: return "integer";
    case FieldType::number: return "number";
    case FieldType::boolean: return "boolean";
    case FieldType::choice: return "choice";
    case FieldType::text: return "text";
    case FieldType::shape: return "shape";
    case FieldType::names: return "names";
    case FieldType::callable: return "callable";
  }
  return "text";
}

namespace {

using nlohmann::json;

// The field builders: one line per field in the records below.
CheckField integer(std::string_view name, json def, json lo, json hi, std::string_view help, bool nullable = false) {
  return {name, FieldType::integer, std::move(def), nullable, lo.get<double>(), hi.get<double>(), {}, help};
}
CheckField number(std::string_view name, double def, double lo, double hi, std::string_view help) {
  return {name, FieldType::number, def, false, lo, hi, {}, help};
}
CheckField boolean(std::string_view name, json def, std::string_view help, bool nullable = false) {
  return {name, FieldType::boolean, std::move(def), nullable, 0, 0, {}, help};
}
CheckField text(std::string_view name, json def, std::string_view help, bool nullable = false) {
  return {name, FieldType::text, std::move(def), nullable, 0, 0, {}, help};
}
template <class E>
CheckField choice(std::string_view name, json def, std::string_view help, bool nullable = false,
                  std::vector<std::string> extra = {}) {
  std::vector<std::string> choices = choices_of<E>();
  choices.insert(choices.end(), extra.begin(), extra.end());
  return {name, FieldType::choice, std::move(def), nullable, 0, 0, std::move(choices), help};
}
CheckField choice_of(std::string_view name, json def, std::vector<std::string> choices, std::string_view help) {
  return {name, FieldType::choice, std::move(def), false, 0, 0, std::move(choices), help};
}
CheckField callable(std::string_view name, json def, std::vector<std::string> choices, std::string_view help) {
  return {name, FieldType::callable, std::move(def), false, 0, 0, std::move(choices), help};
}
template <class E>
json name_json(E value) {
  return std::string(name_of(value));
}

// The largest seed: RapidCheck's is a uint64; a JSON number holds it exactly, a double does not.
constexpr std::uint64_t kMaxSeed = ~std::uint64_t{0};
constexpr int kMaxCount = 1 << 20;  // heads, kv_heads: as nsv's flags

// NsConfig's knobs as a check takes them. Defaults: NsConfig's, except `products`: a check compares
// the user's implementation with the reference bit for bit, and PyTorch (so any torch Newton-Schulz)
// computes both triangles of the n x n products.
void add_ns_knobs(std::vector<CheckField>& f, std::string_view steps_name, json dtype_default, bool auto_accumulate) {
  const NsConfigNames d = ns_config_names();
  f.push_back(choice<Kernel>("kernel", d.kernel, "the NS kernel claimed: standard (zeropower_via_newtonschulz5) or gram"));
  f.push_back(integer(steps_name, d.steps, 0, 1000, "NS steps"));
  f.push_back(choice<DType>("dtype", std::move(dtype_default), "the compute dtype claimed"));
  if (auto_accumulate)
    f.push_back(choice<Accumulate>("accumulate", "auto",
                                   "GEMM accumulation: auto (measured on the device once per process), fp32 or compute",
                                   false, {"auto"}));
  else
    f.push_back(choice<Accumulate>("accumulate", d.accumulate, "GEMM accumulation: fp32 (tensor cores) or compute"));
  f.push_back(choice<Products>("products", "full",
                               "full (PyTorch's bits: both triangles) or symmetric (upper triangle, mirrored)"));
  f.push_back(text("coeffs", d.coeffs, "a built-in schedule (keller, you, quintic, polar_express, ...) or a file of 'a b c' lines"));
  f.push_back(text("restart_at", d.restart_at, "gram kernel: the steps it restarts before ('2,4', 'none')"));
}

// The run's settings: RapidCheck's cases, sizes, seed, the shrink budget, replay and the failures' folder.
void add_run_settings(std::vector<CheckField>& f, int max_success, int max_dim) {
  f.push_back(integer("max_success", max_success, 1, 100000, "cases per property"));
  f.push_back(integer("max_size", 100, 0, 100000, "RapidCheck's size parameter"));
  f.push_back(integer("max_dim", max_dim, kMinDrawnSide, kMaxDrawnSide, "the largest side drawn"));
  f.push_back({"seed", FieldType::integer, kDefaultSeed, true, 0, static_cast<double>(kMaxSeed), {},
               "RapidCheck's seed (None: the fixed default, so a check that passes in CI passes again)"});
  f.push_back(number("shrink_seconds", RunSettings{}.shrink_seconds, 0, RunSettings::kMaxShrinkSeconds,
                     "how long a failing property may shrink its counterexample after the first failure (0: the "
                     "first failing case as found)"));
  f.push_back(text("replay", nullptr, "a failure's replay string: run exactly that case again", true));
  f.push_back(text("counterexamples", nullptr,
                   "a folder for the failures' arrays (a fresh subfolder, never overwriting a file; None: a new "
                   "temporary folder)",
                   true));
}

void add_kernel_selection(std::vector<CheckField>& f) {
  f.push_back(boolean("batched", false, "fn also takes 3-D batches of equally shaped matrices"));
  f.push_back({"required", FieldType::names, nullptr, true, 0, 0, {}, "property names or codes that decide the result, instead of the promise's"});
  f.push_back({"properties", FieldType::names, nullptr, true, 0, 0, {}, "run only these property names or codes"});
  // a side's limit is the elements' (one_configuration refuses a shape of more, naming the limit)
  f.push_back({"shape", FieldType::shape, nullptr, true, 1, static_cast<double>(kMaxPinnedElements), {},
               "(rows, cols): every matrix of this shape (your layer's)"});
  f.push_back(choice<KernelPromise>("promise", name_json(KernelPromise::map),
                                    "what fn promises: map (the right function within derived bounds) or bitwise (and "
                                    "reproducible bits)"));
}

void add_tp_claim(std::vector<CheckField>& f) {
  f.push_back(choice<TpClaim>("claim", name_json(TpClaim::exact), "what fn promises: exact, rounding or none"));
  f.push_back(choice<Target>("target", name_json(Target::whole), "the semantics promised: whole or per_head"));
  f.push_back(boolean("aspect_scale", false, "fn is a Muon update: the target carries sqrt(max(1, rows/cols))"));
}

void add_mesh(std::vector<CheckField>& f) {
  f.push_back(integer("dp", nullptr, 1, kMaxScopeTp, "a TP x DP mesh of this many DP ranks (None: TP alone)", true));
  f.push_back(choice<DpPartition>("dp_partition", name_json(DpPartition::zero),
                                  "how each TP shard is cut over the DP ranks: zero (flat pieces) or fsdp (whole rows)"));
}

// Where a torch check's ranks run: processes on the loopback, each case within a time limit.
void add_ranks(std::vector<CheckField>& f, double timeout) {
  f.push_back(choice_of("backend", "gloo", {"gloo", "nccl", "mpi"}, "torch.distributed's backend"));
  f.push_back(number("timeout", timeout, 0.01, 86400,
                     "seconds a case may take on the ranks: past it the case fails (a hang) and the ranks restart"));
}

void add_threads(std::vector<CheckField>& f) { f.push_back(integer("threads", 1, 1, 64, "torch threads per rank")); }

void add_torch_device(std::vector<CheckField>& f) {
  f.push_back(choice<DType>("input_dtype", nullptr, "the dtype fn is handed its input in, when not the compute dtype", true));
  f.push_back(text("device", "cpu", "the device fn's tensors are on (cpu, cuda, ...)"));
}

// A limit on each call of the user's code where it runs in the checking process (numpy and torch
// kernels, numpy TP functions): a call past it fails its case, naming the limit, and the check goes on.
void add_call_limit(std::vector<CheckField>& f) {
  f.push_back(number("timeout", 300, 0, 86400,
                     "seconds one call of the implementation may take: past it the call raises CallTimeout and the "
                     "case fails (0: no limit)"));
}

std::vector<CheckField> kernel_fields(json dtype_default, bool torch) {
  std::vector<CheckField> f;
  add_ns_knobs(f, "steps", std::move(dtype_default), torch);
  if (torch) add_torch_device(f);
  add_kernel_selection(f);
  add_call_limit(f);
  add_run_settings(f, 100, 48);
  return f;
}

std::vector<CheckField> tp_fields() {
  std::vector<CheckField> f;
  add_tp_claim(f);
  add_ns_knobs(f, "steps", ns_config_names().dtype, false);
  f.push_back(integer("max_tp", 8, 1, kMaxScopeTp, "tp degrees 1..max_tp drawn (and more ranks than rows: zero-width shards)"));
  add_mesh(f);
  f.push_back(integer("diagnosis_cases", 24, 0, 10000, "layouts sampled for the diagnosis"));
  add_call_limit(f);
  add_run_settings(f, 100, 48);
  return f;
}

// check_tp on real ranks draws fewer and smaller cases than on numpy: every case is a round trip
// through world_size processes and their collectives, and the tp-1 half of the exact claim a second.
std::vector<CheckField> torch_tp_fields() {
  std::vector<CheckField> f;
  f.push_back(integer("world_size", 2, 1, kMaxScopeTp, "the ranks of the process group: every case is drawn at tp = world_size"));
  add_ranks(f, 10.0);
  add_tp_claim(f);
  f.push_back(boolean("uneven", true, "False: only layouts whose ranks hold equal widths"));
  f.push_back(boolean("zero_width", true, "False: no rank holds an empty shard"));
  f.push_back(boolean("fused", nullptr, "True: only fused [Q;K;V] layers; False: none (None: both)", true));
  f.push_back(integer("axis", nullptr, 0, 1, "only this split axis, 0 (rows) or 1 (columns) (None: both)", true));
  f.push_back({"shape", FieldType::shape, nullptr, true, 1, 65536, {}, "(rows, cols): your layer; with heads, split as AutoTP splits attention"});
  f.push_back(integer("heads", 0, 0, kMaxCount, "with shape: the heads its rows hold"));
  f.push_back(integer("kv_heads", 0, 0, kMaxCount, "with shape and heads: the KV groups (0: as many as heads)"));
  add_mesh(f);
  add_ns_knobs(f, "steps", ns_config_names().dtype, true);
  add_torch_device(f);
  f.push_back(choice<Strategy>("strategy", nullptr, "compare each case's collectives with the cost model's plan of this strategy", true));
  add_threads(f);
  f.push_back(integer("diagnosis_cases", 12, 0, 10000, "layouts sampled for the diagnosis"));
  add_run_settings(f, 30, 32);
  return f;
}

std::vector<CheckField> optimizer_fields() {
  std::vector<CheckField> f;
  f.push_back(integer("tp", 2, 1, kMaxScopeTp, "the tensor-parallel degree the optimizer runs at"));
  add_mesh(f);
  f.push_back(callable("layout", "plain", {"plain", "megatron", "deepspeed"},
                       "how each local shard is presented: plain, megatron or deepspeed attributes, or "
                       "a callable (full, spec, ctx) -> Parameter"));
  f.push_back(integer("steps", 3, 1, 1000, "optimizer steps per draw"));
  f.push_back(callable("grads", "random", {"random"},
                       "random (seeded spectra as the property generators draw them) or a callable "
                       "(step, name, shape, dp_rank) -> full gradient"));
  f.push_back(choice<TpClaim>("claim", name_json(TpClaim::exact), "what the optimizer promises: exact, rounding or none"));
  f.push_back(callable("reference", "tp1", {"tp1"}, "tp1 (the same factory at tp = 1) or a second factory"));
  f.push_back(boolean("compare_state", true, "also compare every state tensor of the shard's shape (momentum buffers)"));
  f.push_back(choice<Strategy>("strategy", nullptr,
                               "the TP strategy the optimizer runs: each step's collectives beside the cost model's plan",
                               true));
  f.push_back(integer("world_size", nullptr, 1, 4096,
                      "the processes (None: tp x dp); under an external launcher, the launcher's world", true));
  add_ranks(f, 60.0);
  add_threads(f);
  f.push_back({"seed", FieldType::integer, kDefaultSeed, true, 0, static_cast<double>(kMaxSeed), {},
               "the gradients' seed (None: the fixed default)"});
  f.push_back(integer("max_success", 1, 1, 1000, "seeded gradient draws"));
  f.push_back(text("replay", nullptr, "a failure's replay string: rerun that draw, parameters and step", true));
  add_ns_knobs(f, "ns_steps", ns_config_names().dtype, false);
  return f;
}

std::vector<CheckRecord> make_records() {
  return {
      {CheckKind::kernel, "kernel", "the kernel catalogue on fn(G, steps) -> array (numpy)", kernel_fields(ns_config_names().dtype, false)},
      {CheckKind::tp, "tp", "the TP claims and the diagnosis on fn(shards, spec) -> list of arrays (numpy)", tp_fields()},
      {CheckKind::torch_kernel, "torch_kernel", "the kernel catalogue on fn(G, steps) -> torch.Tensor",
       kernel_fields(name_json(DType::bf16), true)},
      {CheckKind::torch_tp, "torch_tp", "the TP claims on fn(shard, spec, group) on real torch.distributed ranks",
       torch_tp_fields()},
      {CheckKind::optimizer, "optimizer",
       "a whole optimizer make_optimizer(named_params, ctx) on real TP (x DP) ranks against tp = 1", optimizer_fields()},
  };
}

std::string allowed(const CheckField& f) {
  const auto bounds = [&] {
    const auto num = [](double v) {
      return v == std::floor(v) && std::abs(v) < 1e18 ? std::to_string(static_cast<long long>(v)) : json(v).dump();
    };
    return " between " + num(f.min) + " and " + num(f.max);
  };
  std::string out;
  switch (f.type) {
    case FieldType::integer: out = "an integer" + bounds(); break;
    case FieldType::number: out = "a number" + bounds(); break;
    case FieldType::boolean: out = "true or false"; break;
    case FieldType::text: out = "a string"; break;
    case FieldType::shape: out = "(rows, cols), two integers" + bounds(); break;
    case FieldType::names: out = "a property name or code, or a list of them"; break;
    case FieldType::choice:
    case FieldType::callable: {
      for (const auto& c : f.choices) out += (out.empty() ? "one of " : ", ") + c;
      if (f.type == FieldType::callable) out += (out.empty() ? "" : ", or ") + std::string("a callable");
      break;
    }
  }
  return f.nullable ? out + " (or None)" : out;
}

[[noreturn]] void refuse(const CheckField& f, const json& value) {
  throw InvalidField(std::string(f.name), "must be " + allowed(f) + ", got " + value.dump());
}

bool in_range(const CheckField& f, const json& v) {
  // long double holds every int64 and uint64 exactly (x86's 64-bit mantissa): a seed near 2^64 compares right
  const long double x = v.is_number_unsigned() ? static_cast<long double>(v.get<std::uint64_t>())
                        : v.is_number_integer() ? static_cast<long double>(v.get<std::int64_t>())
                                                : static_cast<long double>(v.get<double>());
  return x >= f.min && x <= f.max;
}

json checked(const CheckField& f, const json& v) {
  if (v.is_null()) {
    if (f.nullable || f.default_value.is_null()) return f.nullable ? f.default_value : json();
    refuse(f, v);
  }
  switch (f.type) {
    case FieldType::integer:
      if (!v.is_number_integer() || !in_range(f, v)) refuse(f, v);
      return v;
    case FieldType::number:
      if (!v.is_number() || !std::isfinite(v.get<double>()) || !in_range(f, v)) refuse(f, v);
      return v.get<double>();
    case FieldType::boolean:
      if (!v.is_boolean()) refuse(f, v);
      return v;
    case FieldType::text:
      if (!v.is_string()) refuse(f, v);
      return v;
    case FieldType::shape:
      if (!v.is_array() || v.size() != 2) refuse(f, v);
      for (const json& side : v)
        if (!side.is_number_integer() || !in_range(f, side)) refuse(f, v);
      return v;
    case FieldType::names:
      if (v.is_string()) return json::array({v});
      if (!v.is_array()) refuse(f, v);
      for (const json& n : v)
        if (!n.is_string()) refuse(f, v);
      return v;
    case FieldType::choice:
    case FieldType::callable:
      if (v.is_string() && (v == "<callable>" ? f.type == FieldType::callable
                                              : std::find(f.choices.begin(), f.choices.end(), v.get<std::string>()) != f.choices.end()))
        return v;
      refuse(f, v);
  }
  refuse(f, v);
}

}  // namespace

const CheckField& CheckRecord::field(std::string_view field_name) const {
  for (const CheckField& f : fields)
    if (f.name == field_name) return f;
  throw std::logic_error("the " + std::string(name) + " check has no field " + std::string(field_name));
}

nlohmann::json CheckRecord::settings_of(const nlohmann::json& given) const {
  if (!given.is_object()) throw InvalidField("settings", "must be an object of field -> value");
  for (const auto& [key, value] : given.items()) {
    const bool known = std::any_of(fields.begin(), fields.end(), [&](const CheckField& f) { return f.name == key; });
    if (!known) {
      std::string names;
      for (const CheckField& f : fields) names += (names.empty() ? "" : ", ") + std::string(f.name);
      throw InvalidField(key, "is not a setting of the " + std::string(name) + " check; its settings: " + names);
    }
  }
  json out = json::object();
  for (const CheckField& f : fields) {
    const auto it = given.find(std::string(f.name));
    out[std::string(f.name)] = it == given.end() ? f.default_value : checked(f, *it);
  }
  return out;
}

std::span<const CheckRecord> check_records() {
  static const std::vector<CheckRecord> records = make_records();
  return records;
}

const CheckRecord& check_record(CheckKind kind) {
  for (const CheckRecord& r : check_records())
    if (r.kind == kind) return r;
  throw std::logic_error("a check kind without a record");
}

const CheckRecord& check_record(std::string_view name) {
  std::string names;
  for (const CheckRecord& r : check_records()) {
    if (r.name == name) return r;
    names += (names.empty() ? "" : ", ") + std::string(r.name);
  }
  throw InvalidField("kind", "must be one of " + names + "; got '" + std::string(name) + "'");
}

RunSettings run_settings_of(const nlohmann::json& s) {
  RunSettings r;
  r.seed = s.at("seed").is_null() ? kDefaultSeed : s.at("seed").get<std::uint64_t>();
  r.max_success = s.at("max_success").get<int>();
  r.max_size = s.value("max_size", 100);
  r.shrink_seconds = s.value("shrink_seconds", RunSettings{}.shrink_seconds);
  return r;
}

NsConfig ns_config_of(const nlohmann::json& s) {
  NsConfigNames n;
  n.kernel = s.at("kernel").get<std::string>();
  n.steps = s.contains("ns_steps") ? s.at("ns_steps").get<int>() : s.at("steps").get<int>();
  n.dtype = s.at("dtype").get<std::string>();
  n.accumulate = s.at("accumulate").get<std::string>();
  if (n.accumulate == "auto")
    throw InvalidField("accumulate", "'auto' is resolved by the torch front end (measured on the device) before the core runs");
  n.products = s.at("products").get<std::string>();
  n.coeffs = s.at("coeffs").get<std::string>();
  n.restart_at = s.at("restart_at").get<std::string>();
  return ns_config_from_names(n);
}

TpScope tp_scope_of(const nlohmann::json& s) {
  TpScope scope;
  scope.max_tp = s.value("max_tp", scope.max_tp);
  if (s.contains("world_size")) scope.tps = {s.at("world_size").get<int>()};
  scope.max_side = s.at("max_dim").get<std::int64_t>();
  if (s.contains("axis") && !s.at("axis").is_null()) scope.axis = s.at("axis").get<int>();
  scope.uneven = s.value("uneven", scope.uneven);
  scope.zero_width = s.value("zero_width", scope.zero_width);
  if (s.contains("fused") && !s.at("fused").is_null()) scope.fused = s.at("fused").get<bool>();
  if (s.contains("shape") && !s.at("shape").is_null())
    scope.shape = std::pair{s.at("shape")[0].get<std::int64_t>(), s.at("shape")[1].get<std::int64_t>()};
  scope.heads = s.value("heads", std::int64_t{0});
  scope.kv_heads = s.value("kv_heads", std::int64_t{0});
  if (!s.at("dp").is_null()) scope.dp = s.at("dp").get<int>();
  scope.dp_partition = parse_named<DpPartition>(s.at("dp_partition").get<std::string>());
  scope.validate();
  return scope;
}

}  // namespace nsv::checks
