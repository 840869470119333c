#!/usr/bin/env bash
# The sanitizer job (CI runs it after the gate): the whole project built with AddressSanitizer and
# UndefinedBehaviorSanitizer (-O2 -g1, CUDA off) into build-asan/, then the gate, the CLI
# bad-input check included, run on that build. Every sanitizer report is fatal: it aborts the
# test that triggered it, so the job fails (NSV_SANITIZE makes reports non-recoverable).
# Extra arguments go to ctest, as for tools/test.sh.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export NSV_BUILD_DIR="${NSV_ASAN_BUILD_DIR:-$repo/build-asan}"
# Build type Instrumented: -O2 with line tables only (CMakeLists.txt says why).
# The drivers (checks, property executables, Python extension, CLI) at -Og (CMakeLists.txt, nsv_driver).
export NSV_CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Instrumented -DNSV_INSTRUMENTED_DRIVER_OPT=-Og -DNSV_SANITIZE=address,undefined -DNSV_WITH_CUDA=OFF"
# detect_leaks: LeakSanitizer too. print_stacktrace: UBSan reports say where. The suppressions
# name third-party code only (each with its reason).
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:check_initialization_order=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Boost.Test catches the sanitizers' abort as a signal by default and runs on from a state the
# report left behind (CI once sat on a heap-use-after-free until the test's timeout): let the
# abort end the test, so that ctest says "Subprocess aborted" at once.
export BOOST_TEST_CATCH_SYSTEM_ERRORS=no
export LSAN_OPTIONS="suppressions=$repo/tools/sanitizers/lsan.supp:print_suppressions=0"
# The MPI tests (label mpi) are left out: their processes are started by mpirun and run inside
# Open MPI, whose own allocations and malloc hooks have not been checked against the sanitizers
# here yet (the MPI code itself is exercised under ASan by nothing else either: a known gap).
# The Python tests run with the instrumented extension in Debian's interpreter, the sanitizer
# runtimes preloaded (python/CMakeLists.txt), except those that start real torch processes (label
# torch_ranks; the README's blocks that start them are python_nsverify_readme_torch_ranks): their
# forkserver ranks, uninstrumented torch with its OpenMP and gloo threads under the
# preloaded runtime, did not become ready within the pool's 180 s start limit (a known gap; the
# property code they run is the catalogue the numpy tests run here).
# report_rerender reruns six of its seven report sections here: training's engine is the step
# engine over the training checkpoints, which the step section runs sanitized, and it is the
# largest part of the job's longest test. (gram_stability stays: its figure is drawn from its rerun.)
export NSV_RERENDER_SECTIONS="sweeps step diagnosis schedules gram_stability audits"
# The exhaustive walk over every float of properties/foundation/rounding_props.cpp (arithmetic on registers alone)
# is left to the gate: a build with AddressSanitizer disables it (__SANITIZE_ADDRESS__).
# python_nsverify_wrong_implementations is left to the gate too: it runs the whole catalogue of
# wrong and correct implementations through the same bindings and checks that the other Python
# tests here run (test_examples, test_checker_checked, test_exits, ...), and under the sanitizers
# it was the job's longest test. diagnosis_figures_negative_control is left to the gate as well:
# what it runs of this build is nsverify.ns, as diagnosis_figures does here; the rest is numpy.
# Tests labelled python_only load nothing this build compiles (the report renderer, the mutation
# sampler's sites, report_numbers): under the sanitizers they would check nothing the gate does not.
if [ $# -eq 0 ]; then
  set -- -L gate -LE "mpi|torch_ranks|python_only" -E "^(python_nsverify_wrong_implementations|diagnosis_figures_negative_control)$"
fi
exec "$repo/tools/test.sh" "$@"
