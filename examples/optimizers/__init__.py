"""The catalogue of Muon optimizers nsverify.torch.check_optimizer is tested against: each one a
`make_optimizer(named_params, ctx)` factory in its own module, written from the published algorithms (each
module's docstring names its sources), and CATALOGUE, the one table of what each must do.

kind       correct   the single-device update bit for bit ("exact")
           rounding  the same update in exact arithmetic, other float32 bits ("rounding", not "exact")
           defect    the seed's defect (DeepSpeed AutoTP's per-shard NS today): fails both claims
           wrong     a bug seen in the wild (or seeded), fails "exact", each with its own diagnosis
reference  "self": checked against its own factory at tp = 1 (a TP defect shows as a TP dependence);
           "gather_tp_muon": against gather_tp_muon.make_optimizer, the correct Muon (a defect in the
           algorithm is the same at every tp, so only a correct optimizer shows it; at tp = dp = 1 that is
           single_device's update bit for bit, and unlike single_device it also runs on DP pieces)
"""

import dataclasses
import typing

from . import (default_group_allgather, gather_tp_muon, gram_allreduce_tp_muon, local_shape_scale, momentum_twice,
               ns_skipped, ns_twice, owner_tp_muon, per_head_tp_muon, per_shard_muon, routed_to_adamw, single_device,
               stale_head_count, wd_wrong_side)

KINDS = ("correct", "rounding", "defect", "wrong")
REFERENCES = ("self", "gather_tp_muon")


@dataclasses.dataclass(frozen=True)
class Entry:
    module: str
    factory: typing.Callable
    kind: str
    #: the hypothesis check_optimizer's diagnosis must match on every failing parameter under claim "exact" (its
    #: words, _optimizer_diagnosis), or, where the hypothesis' premise fails on a parameter (wd_wrong_side's norms),
    #: none; "": none may match (a correct or rounding-only optimizer)
    diagnosis: str
    must_pass: tuple
    must_fail: tuple
    reference: str = "self"
    #: False: correct at tp = 1 only (run against itself there)
    tensor_parallel: bool = True
    hyperparameters: dict = dataclasses.field(default_factory=lambda: dict(single_device.HYPERPARAMETERS))

    def __post_init__(self):
        assert self.kind in KINDS and self.reference in REFERENCES


def _entry(module, kind, diagnosis, must_pass, must_fail, **rest):
    name = module.__name__.rsplit(".", 1)[-1]
    return Entry(name, module.make_optimizer, kind, diagnosis, must_pass, must_fail, **rest)


CATALOGUE = [
    _entry(single_device, "correct", "", ("exact",), (), tensor_parallel=False),
    _entry(gather_tp_muon, "correct", "", ("exact",), ()),
    _entry(owner_tp_muon, "correct", "", ("exact",), ()),
    _entry(per_head_tp_muon, "correct", "", ("exact",), ()),
    _entry(gram_allreduce_tp_muon, "rounding", "", ("rounding",), ("exact",)),
    _entry(per_shard_muon, "defect", "per-shard NS, local-shape scale", (), ("exact", "rounding")),
    _entry(default_group_allgather, "wrong", "shard overwritten by another rank's", (), ("exact",)),
    _entry(routed_to_adamw, "wrong", "routed to the other group", (), ("exact",), reference="gather_tp_muon"),
    _entry(stale_head_count, "wrong", "stale head count", (), ("exact",)),
    _entry(local_shape_scale, "wrong", "whole-matrix NS, local-shape scale", (), ("exact",)),
    _entry(ns_skipped, "wrong", "NS skipped", (), ("exact",)),
    _entry(ns_twice, "wrong", "NS run twice", (), ("exact",), reference="gather_tp_muon"),
    _entry(momentum_twice, "wrong", "momentum advanced twice", (), ("exact",), reference="gather_tp_muon"),
    _entry(wd_wrong_side, "wrong", "weight decay applied after the update", (), ("exact",), reference="gather_tp_muon"),
]
