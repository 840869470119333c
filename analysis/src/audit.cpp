// run_audit: every Muon matrix of a layer (audit_strategy.cpp), measured when asked
// (proxy_measurement.cpp), the plans over an optimizer step (audit_totals.cpp) and the findings
// (audit_findings.cpp).
#include "nsv/analysis/audit.hpp"

#include <memory>
#include <string>

#include "audit_stages.hpp"
#include "nsv/invalid_field.hpp"
#include "nsv/resources.hpp"

namespace nsv {
namespace {

// A mesh audit plans every strategy for every rank: 18 plans of tp x dp ranks per matrix. 16384
// DP ranks and 65536 ranks in all cover today's largest jobs (e.g. TP 8 x DP 2048).
constexpr int kMaxAuditDp = 16384;
constexpr int kMaxAuditMeshRanks = 65536;

}  // namespace

void AuditOptions::validate() const {
  if (tp < 1 || tp > 1024) throw InvalidField("tp", "must be between 1 and 1024, got " + std::to_string(tp));
  // The command line's limits, here so that every front end (nsv audit, nsverify.audit) has them.
  if (dp < 1 || dp > kMaxAuditDp)
    throw InvalidField("dp", "must be between 1 and " + std::to_string(kMaxAuditDp) + ", got " + std::to_string(dp));
  if (tp * dp > kMaxAuditMeshRanks)
    throw InvalidField("dp", "makes a mesh of tp x dp = " + std::to_string(tp * dp) + " ranks; at most " +
                                 std::to_string(kMaxAuditMeshRanks) + " are audited");
  if (grain < 1 || grain > (std::int64_t{1} << 20))
    throw InvalidField("grain", "must be between 1 and 1048576, got " + std::to_string(grain));
  if (measure_max_elements < 1 || measure_max_elements > (std::int64_t{1} << 30))
    throw InvalidField("measure_max_elements", "must be between 1 and 1073741824 (2^30), got " + std::to_string(measure_max_elements));
  if (measure)  // a measured proxy holds about measure_max_elements elements: refused before it is allocated
    require_memory(ns_working_bytes(measure_max_elements, 1), "measure_max_elements",
                   std::to_string(measure_max_elements) + "-element measured matrices");
  ns.validate();
  cost.validate();
}

AuditResult run_audit(const ModelConfig& model, const AuditOptions& o) {
  o.validate();
  if (o.dp > 1) require_mesh_auditable(model);
  AuditResult res;
  res.model = model;
  res.options = o;
  res.options.backend = nullptr;
  res.options.on_measured = nullptr;
  std::unique_ptr<Backend> own_backend;
  const Backend* backend = o.backend;
  if (o.measure && !backend) {
    own_backend = make_cpu_backend();
    backend = own_backend.get();
  }
  std::uint64_t param_index = 0;
  for (const MuonParam& p : model.layer_params()) {
    ParamAudit pa = audit_stages::audit_param(p, o);
    if (o.measure) {
      pa.divergence = measure_shard_divergence(p, o.tp, o.grain, o.ns, o.measure_max_elements, o.seed + 1000003 * param_index, *backend);
      if (o.on_measured) o.on_measured();
    }
    ++param_index;
    res.params.push_back(std::move(pa));
  }
  res.totals = audit_stages::audit_totals(model, res.params, o);
  res.recommendation = audit_stages::recommend(res.totals, o.tp);
  res.notes = audit_stages::audit_notes(model, res.params, o);
  if (o.dp > 1) res.mesh = audit_mesh(model, o.tp, o.dp, o.dp_partition, o.grain, o.ns, o.cost, o.comm);
  return res;
}

}  // namespace nsv
