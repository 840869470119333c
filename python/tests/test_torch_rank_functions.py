"""nsverify.torch's checks on functions the ranks cannot import: a TP function (and an optimizer
factory) defined in the __main__ of standard input (a REPL, `python3 - < script.py`), of a notebook-like cell
exec'd in __main__, or of a script without a main guard travels to the ranks by value and is checked; the
script's top level runs once, not once per rank; a closure over what cannot be sent is refused, before any
rank starts, with what to change. __main__ is what is under test, so each of those runs in a fresh
interpreter, in an empty folder (nothing in it importable by the ranks)."""
import pathlib
import subprocess
import sys
import textwrap
import threading

import pytest

pytest.importorskip("torch")

import nsverify.torch as nt  # noqa: E402
from nsverify.torch._pool import function_ref  # noqa: E402
from processes import rank_processes  # noqa: E402

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
EXACT = "tp_result_equals_its_own_tp_1_result_bit_for_bit"
MARKER = "top level of the user's program"

# A whole-matrix TP update written as a user would in a notebook: the shards all-gathered (padded to the
# longest: gloo's all_gather takes equal sizes), put back at their ranges, Keller Jordan's NS of the whole
# matrix in float32, this rank's ranges kept. Bit-identical at every tp (claim "exact").
TP_FUNCTION = f'''
import torch
import torch.distributed as dist
import nsverify.torch as nt

print("{MARKER}", flush=True)
KELLER = (3.4445, -4.7750, 2.0315)


def newton_schulz(G, steps):
    a, b, c = KELLER
    X = G.float()
    tall = X.size(0) > X.size(1)
    X = X.mT if tall else X
    X = X / (X.norm() + 1e-7)
    for _ in range(steps):
        A = X @ X.mT
        X = a * X + (b * A + c * A @ A) @ X
    return X.mT if tall else X


def gather_update(shard, spec, group):
    with torch.no_grad():
        sizes = [rows * cols for rows, cols in spec.shapes]
        buf = torch.zeros(max(1, max(sizes)))
        buf[:shard.numel()] = shard.reshape(-1)
        parts = [torch.empty_like(buf) for _ in sizes]
        dist.all_gather(parts, buf, group=group)
        whole = torch.empty(spec.rows, spec.cols)
        for part, n, shape, ranges in zip(parts, sizes, spec.shapes, spec.ranges):
            block, offset = part[:n].reshape(shape), 0
            for begin, end in ranges:
                whole.narrow(spec.axis, begin, end - begin).copy_(block.narrow(spec.axis, offset, end - begin))
                offset += end - begin
        update = newton_schulz(whole, spec.steps)
        mine = [update.narrow(spec.axis, begin, end - begin) for begin, end in spec.ranges[spec.rank]]
        return torch.cat(mine, dim=spec.axis) if mine else torch.zeros(tuple(spec.shard_shape))
'''

CHECK_TP = f'''
result = nt.check_tp(gather_update, world_size=2, claim="exact", kernel="standard", max_dim=24, max_success=3,
                     diagnosis_cases=0)
print("verdict", result.verdict, "cases", result["{EXACT}"].cases_checked, flush=True)
'''


def run_python(args, cwd, stdin=None):
    out = subprocess.run([sys.executable, *args], input=stdin, cwd=cwd, capture_output=True, text=True, timeout=300)
    return out.returncode, out.stdout + out.stderr


def assert_checked(status, output):
    assert status == 0, output
    assert "verdict PASS cases 3" in output, output
    assert output.count(MARKER) == 1, output  # the user's program ran once: no rank re-ran it


def test_a_function_read_from_standard_input_is_checked_on_the_ranks(tmp_path):
    status, output = run_python(["-"], tmp_path, stdin=TP_FUNCTION + CHECK_TP)
    assert_checked(status, output)


def test_a_function_of_a_notebook_cell_exec_d_in_main_is_checked_on_the_ranks(tmp_path):
    # What a notebook kernel does with a cell: compile it under a name that is no file, run it in __main__'s dict.
    driver = ("import __main__, sys\n"
              "exec(compile(sys.stdin.read(), '<cell>', 'exec'), __main__.__dict__)\n")
    status, output = run_python(["-c", driver], tmp_path, stdin=TP_FUNCTION + CHECK_TP)
    assert_checked(status, output)


def test_a_script_without_a_main_guard_is_checked_and_its_top_level_runs_once(tmp_path):
    script = tmp_path / "unguarded_check.py"
    script.write_text(TP_FUNCTION + CHECK_TP)
    status, output = run_python([str(script)], tmp_path)
    assert_checked(status, output)


def test_a_closure_over_a_lock_is_refused_before_any_rank_starts_with_what_to_change():
    def make_update():
        lock = threading.Lock()

        def locked_update(shard, spec, group):
            with lock:
                return shard.clone()
        return locked_update

    with pytest.raises(nt.RankStartError) as refused:
        nt.check_tp(make_update(), world_size=2, claim="exact", max_success=3, diagnosis_cases=0)
    assert str(refused.value) == ("locked_update closes over lock (a _thread.lock), which cannot be sent to the ranks: "
                                  "define lock inside locked_update, or move locked_update to a module the ranks can "
                                  "import")
    assert rank_processes() == []


def test_a_main_function_using_an_open_socket_is_refused_naming_the_global(tmp_path):
    src = TP_FUNCTION + textwrap.dedent('''
        import socket
        connection = socket.socket()

        def logged_update(shard, spec, group):
            connection.fileno()
            return gather_update(shard, spec, group)

        try:
            nt.check_tp(logged_update, world_size=2, max_success=3)
        except nt.RankStartError as e:
            print("refused:", e, flush=True)
        ''')
    status, output = run_python(["-"], tmp_path, stdin=src)
    assert status == 0, output
    assert ("refused: logged_update uses the global connection (a socket.socket), which cannot be sent to the ranks: "
            "create connection inside logged_update, or move logged_update to a module the ranks can import") in output


# An optimizer written in a notebook on top of a library's pieces (examples/optimizers, imported by reference):
# the factory and its class, defined in __main__, go by value.
OPTIMIZER = f'''
import sys
sys.path.insert(0, {str(EXAMPLES)!r})
import nsverify.torch as nt
from optimizers import tp_comm
from optimizers.single_device import SingleDeviceMuon

print("{MARKER}", flush=True)


class NotebookGatherMuon(SingleDeviceMuon):
    def orthogonalize(self, direction, spec):
        full = tp_comm.gather_tp_matrix(direction, spec, self.ctx)
        update = self.newton_schulz(full) * self.scale_of(spec)
        return tp_comm.tp_slice(update, spec, self.ctx.tp_rank)


def make_optimizer(named_params, ctx):
    return NotebookGatherMuon(named_params, ctx)


params = [nt.Param("q", (10, 8), split=0), nt.Param("o", (8, 10), split=1), nt.Param("norm", (8,))]
result = nt.check_optimizer(make_optimizer, params, tp=2, steps=1, max_success=2)
print("verdict", result.verdict, flush=True)
'''


def test_an_optimizer_factory_read_from_standard_input_is_checked_on_the_ranks(tmp_path):
    status, output = run_python(["-"], tmp_path, stdin=OPTIMIZER)
    assert status == 0, output
    assert "verdict PASS" in output, output
    assert output.count(MARKER) == 1, output


def test_an_optimizer_factory_closing_over_an_open_file_is_refused_with_what_to_change(tmp_path):
    log = open(tmp_path / "steps.log", "w")

    def make_optimizer(named_params, ctx):
        log.write("made\n")
        return None

    try:
        with pytest.raises(nt.RankStartError) as refused:
            nt.check_optimizer(make_optimizer, [nt.Param("q", (10, 8), split=0)], tp=2, steps=1, max_success=1)
    finally:
        log.close()
    message = str(refused.value)
    assert message.startswith("make_optimizer closes over log (a _io.TextIOWrapper), which cannot be sent to the "
                              "ranks"), message
    assert message.endswith(": define log inside make_optimizer, or move make_optimizer to a module the ranks can "
                            "import"), message
    assert rank_processes() == []


def test_a_module_function_still_travels_by_reference():
    import torch_tp
    ref = function_ref(torch_tp.gram_allreduce_update)
    assert ref["pickled"] is not None and ref["by_value"] is None  # the rank imports torch_tp: no copy of its code


def test_without_cloudpickle_a_main_function_is_refused_saying_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cloudpickle", None)  # what `import cloudpickle` meets where it is not installed
    with pytest.raises(nt.RankStartError, match=r"needs cloudpickle: apt-get install python3-cloudpickle"):
        function_ref(lambda shard, spec, group: shard)
