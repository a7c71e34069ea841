#!/usr/bin/env bash
# Runs PyTorch's own distributed conformance suite (torch/testing/_internal/distributed/
# distributed_test.py) against hccl_go: see tests/torch_suite/torch_suite.py.
#
#   scripts/torch_suite.sh [-k EXPR] [pytest arguments...]
#
# Two passes: the suite's name gates read "gloo" (every test gloo runs, plus the ones
# its feature tables open to hccl_go), then "mpi" for the tests gated on MPI alone
# (all_to_all on CPU). Each pass prints pytest's summary, skips with their reasons.
#
# Environment:
#   WORLD_SIZE        ranks per test (default 3)
#   SUITE_PASSES      passes to run (default "gloo mpi"; "hccl_go" gates on hccl_go's own name)
#   SUITE_MPI_FILTER  the tests of the mpi pass (default: the all_to_all tests)
#   SUITE_TESTS       test names (test_broadcast ...): run exactly these in every pass
#   SUITE_JUNIT_DIR   where to write one JUnit XML per pass (default: none)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$ROOT/.venv/bin/python"
[[ -x "$PY" ]] || { echo "torch_suite: $PY missing: run ./scripts/setup.sh first" >&2; exit 1; }
"$PY" -c "import expecttest" 2>/dev/null || "$PY" -m pip install --quiet --disable-pip-version-check expecttest

cd "$ROOT/tests/torch_suite"
export WORLD_SIZE="${WORLD_SIZE:-3}"
rc=0
for gates in ${SUITE_PASSES:-gloo mpi}; do
  targets=(torch_suite.py)
  args=(-q -ra -p no:cacheprovider "$@")
  if [[ -n "${SUITE_TESTS:-}" ]]; then
    targets=()
    for t in $SUITE_TESTS; do targets+=("torch_suite.py::TestDistBackendWithSpawn::$t"); done
  elif [[ "$gates" == mpi ]]; then
    args+=(-k "${SUITE_MPI_FILTER:-all_to_all}")
  fi
  if [[ -n "${SUITE_JUNIT_DIR:-}" ]]; then
    mkdir -p "$SUITE_JUNIT_DIR"
    args+=(--junitxml "$SUITE_JUNIT_DIR/torch_suite_$gates.xml")
  fi
  printf '\n=== torch distributed suite, gates read "%s", world %s\n' "$gates" "$WORLD_SIZE" >&2
  HCCL_GO_SUITE_GATES_AS="$gates" "$PY" -m pytest "${targets[@]}" "${args[@]}" || rc=$?
done
exit "$rc"
