"""Wrong: per-head Newton-Schulz on a TP shard with the whole matrix's head count.

DeepSpeed PR #8384, its author's comment on the TP case (fixed in 943fd03): `set_optimizer_flags` tags
`muon_num_heads` against the whole model before AutoTP's `_tp_partition` replaces each parameter's `.data`
with its shard, "so the tag made against the whole model rides onto a shard". On a Llama q_proj of 8 heads
of 32 at autotp_size 2, the shard's 128 rows divide by 8, the divisibility check passes, and NS runs on 8
blocks of 16 rows, half of each head: "29% off" the whole-model per-head update. Here the stale count is
the whole matrix's, spec.heads (and the two KV parts' heads for a fused QKV), so a shard of h of the
matrix's H heads is cut into H blocks of head_dim * h / H rows.

The one defect against per_head_tp_muon.py: `head_count` reads the model's count instead of the shard's.
Diagnosis it must get: "stale head count" (the blocks are fractions of heads).
Claim: fails exact.
"""

from .per_head_tp_muon import PerHeadTpMuon


class StaleHeadCountMuon(PerHeadTpMuon):
    def head_count(self, shard, spec):
        return spec.heads + 2 * spec.kv_heads if spec.fused else spec.heads


def make_optimizer(named_params, ctx):
    return StaleHeadCountMuon(named_params, ctx)
