#include "tp_cases.hpp"

#include <pybind11/stl.h>

#include <cmath>
#include <sstream>

#include "oracle.hpp"
#include "sharding/layout_generators.hpp"
#include "nsv/strategies.hpp"

namespace nsv::python {

namespace shard = props::shard;

MatD TpCase::matrix() const { return shard::gaussian(rows, cols, seed); }

std::string TpCase::describe() const {
  std::ostringstream s;
  s << rows << "x" << cols << " split on axis " << axis() << " by the " << rule << " rule";
  if (rule == "grain") s << " (grain " << grain << ")";
  if (head_dim > 0) s << " (heads " << heads << ", kv_heads " << kv_heads << ", head_dim " << head_dim << ")";
  s << ", tp " << layout.tp() << ", widths " << shard::sizes_text(layout.widths()) << ", seed " << seed;
  return s.str();
}

namespace {

TpCase from_shard_case(const shard::ShardCase& c) {
  TpCase t;
  t.rows = c.rows;
  t.cols = c.cols;
  t.layout = c.layout();
  t.seed = c.seed;
  if (c.rule.kind == shard::SplitRule::Kind::grain) {
    t.rule = "grain";
    t.grain = c.rule.grain;
  } else {
    t.rule = "head_aligned";
    t.heads = t.kv_heads = c.rule.kv;
    if (c.axis == 0) t.head_dim = c.rows / c.rule.kv;
  }
  return t;
}

TpCase from_head_case(const shard::HeadCase& c) {
  TpCase t;
  t.rows = c.rows();
  t.cols = c.in;
  t.layout = c.layout();
  t.rule = c.query ? "gqa_q_proj" : "gqa_kv_proj";
  t.heads = c.heads();
  t.kv_heads = c.kv;
  t.head_dim = c.head_dim;
  t.seed = c.seed;
  return t;
}

// [Q; K; V] of kv KV heads, group query heads each, head_dim rows per head.
rc::Gen<TpCase> fused_cases(int max_tp, std::int64_t min_side, std::int64_t max_side) {
  return rc::gen::map(rc::gen::tuple(rc::gen::inRange<std::int64_t>(1, 5), rc::gen::inRange<std::int64_t>(1, 4),
                                     shard::head_dims(8), rc::gen::inRange<std::int64_t>(min_side, max_side + 1),
                                     shard::tp_degrees(max_tp), shard::matrix_seeds()),
                      [](const std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, std::uint64_t>& p) {
                        const auto [kv, group, hd, in, tp, seed] = p;
                        const std::int64_t q = kv * group * hd, k = kv * hd;
                        TpCase t;
                        t.layout = fused_layout(0, {head_aligned_sizes(q, kv, tp), head_aligned_sizes(k, kv, tp),
                                                    head_aligned_sizes(k, kv, tp)});
                        t.rows = t.layout.dim;
                        t.cols = in;
                        t.rule = "fused_qkv";
                        t.heads = kv * group;
                        t.kv_heads = kv;
                        t.head_dim = hd;
                        t.seed = seed;
                        return t;
                      });
}

}  // namespace

rc::Gen<TpCase> tp_cases(int max_tp, std::int64_t min_side, std::int64_t max_side, bool heads_on_rows) {
  auto plain = rc::gen::map(shard::shard_cases(shard::tp_degrees(max_tp), min_side, max_side), from_shard_case);
  auto heads = rc::gen::map(shard::head_cases(shard::tp_degrees(max_tp), max_side), from_head_case);
  auto any = rc::gen::weightedOneOf<TpCase>({{4, plain}, {2, heads}, {1, fused_cases(max_tp, min_side, max_side)}});
  return rc::gen::suchThat(any, [=](const TpCase& t) {
    return t.rows >= min_side && t.cols >= min_side && t.rows <= 4 * max_side && (!heads_on_rows || (t.head_dim > 0 && t.axis() == 0));
  });
}

pybind11::object spec_of(const TpCase& t, const NsConfig& cfg) {
  namespace py = pybind11;
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> ranges;
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes;
  for (int r = 0; r < t.layout.tp(); ++r) {
    ranges.emplace_back();
    for (const Range& p : t.layout.ranks[static_cast<std::size_t>(r)]) ranges.back().emplace_back(p.begin, p.end);
    const std::int64_t w = t.layout.width(r);
    shapes.emplace_back(t.axis() == 0 ? w : t.rows, t.axis() == 0 ? t.cols : w);
  }
  return py::module_::import("types").attr("SimpleNamespace")(
      py::arg("tp") = t.layout.tp(), py::arg("axis") = t.axis(), py::arg("rows") = t.rows, py::arg("cols") = t.cols,
      py::arg("rule") = t.rule, py::arg("heads") = t.heads, py::arg("kv_heads") = t.kv_heads, py::arg("head_dim") = t.head_dim,
      py::arg("grain") = t.grain, py::arg("fused_qkv") = t.rule == "fused_qkv", py::arg("ranges") = ranges,
      py::arg("shapes") = shapes, py::arg("kernel") = std::string(kernel_name(cfg.kernel)), py::arg("steps") = cfg.steps,
      py::arg("dtype") = std::string(dtype_name(cfg.dtype)), py::arg("coeffs") = cfg.coeffs.name);
}

std::string semantics_words(Semantics s, AspectScale a) {
  const char* what = s == Semantics::whole ? "whole-matrix NS" : s == Semantics::per_shard ? "per-shard NS" : "per-head NS";
  const char* scale = a == AspectScale::none ? "no aspect scale" : a == AspectScale::global ? "global-shape scale" : "local-shape scale";
  return std::string(what) + ", " + scale;
}

double aspect_scale(std::int64_t rows, std::int64_t cols) {
  // Muon's update scale, DeepSpeed's muon_update: sqrt(max(1, rows / cols)); 1 for an empty shard.
  if (rows == 0 || cols == 0) return 1.0;
  return std::sqrt(std::max(1.0, static_cast<double>(rows) / static_cast<double>(cols)));
}

std::vector<MatD> candidate_blocks(const TpCase& t, const MatD& g, Semantics s, AspectScale a, const NsConfig& cfg) {
  std::vector<MatD> blocks;
  if (s == Semantics::per_shard) {
    for (const MatD& shard_matrix : split(g, t.layout))
      blocks.push_back(shard_matrix.size() ? props::ns(shard_matrix, cfg) : shard_matrix);
  } else {
    const Target target = s == Semantics::whole ? Target::whole : Target::per_head;
    blocks = split(target_result(target, props::cpu(), g, t.head_dim, cfg), t.layout);
  }
  for (MatD& b : blocks)
    b *= a == AspectScale::none ? 1.0 : a == AspectScale::global ? aspect_scale(t.rows, t.cols) : aspect_scale(b.rows(), b.cols());
  return blocks;
}

}  // namespace nsv::python
