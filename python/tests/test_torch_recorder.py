"""The collective recorder of nsverify.torch's ranks (nsverify/torch/_worker.py), in one process: its
table of collectives names each payload argument as torch.distributed's own signatures do, a recorded
call counts the bytes that argument holds, and leaving the `with` puts every original function back."""
import inspect
import types

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

from nsverify.torch._worker import COLLECTIVES, Recorder  # noqa: E402


@pytest.mark.parametrize("name", sorted(n for n in COLLECTIVES if hasattr(dist, n)))
def test_each_payload_argument_is_torchs_own(name):
    index, keyword = COLLECTIVES[name]
    if index is None:
        return
    parameters = list(inspect.signature(getattr(dist, name)).parameters)
    assert parameters[index] == keyword, f"{name}{inspect.signature(getattr(dist, name))}: argument {index} is {parameters[index]}"


def test_calls_are_recorded_with_their_bytes_and_the_originals_restored():
    seen = []
    fake = types.SimpleNamespace(all_reduce=lambda tensor, op=None: seen.append(("all_reduce", tensor)),
                                 all_gather=lambda tensor_list, tensor: seen.append(("all_gather", tensor)))
    originals = dict(vars(fake))
    with Recorder(fake) as recorder:
        fake.all_reduce(torch.zeros(3, 4))                          # 48 bytes, positional
        fake.all_gather([torch.zeros(2)] * 2, tensor=torch.zeros(2, dtype=torch.bfloat16))  # 4 bytes, keyword
    assert recorder.calls == [("all_reduce", 48), ("all_gather", 4)]
    assert [n for n, _ in seen] == ["all_reduce", "all_gather"]     # the real functions ran
    assert vars(fake) == originals                                  # and are back in place
