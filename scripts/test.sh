#!/usr/bin/env bash
# Sets the machine up (scripts/setup.sh) and runs every test of the project:
#   1. gofmt and go vet over the Go code, ruff over the Python, clang-format over C/C++,
#   2. go test -race ./...   (unit tests, and tests/go/, which drives the C API test),
#      then the list of skipped Go tests with their reasons,
#   3. go test without -race for the packages whose matrices -race trims (raceEnabled),
#   4. 30 s of every fuzz target (scripts/fuzz.sh) and a 2,000-op soak (scripts/soak.py),
#   5. pytest tests/py       (the PyTorch backend, in spawned multi-process jobs; it
#      includes a part of PyTorch's own distributed suite),
#   6. the binary wheel (scripts/wheel.sh --test): built for every torch minor version it
#      claims, installed without Go or a compiler, running the main job with each.
# Every stage runs even when an earlier one failed; the summary at the end lists
# each stage's result and time, and the exit status is non-zero if any failed.
#
# Environment:
#   HCCL_GO_TEST_BACKEND  backend under test in tests/py (default: hccl_go; "gloo" checks the tests)
#   PYTEST_ARGS           extra arguments for pytest (e.g. "-k all_reduce -x")
#   GO_TEST_TIMEOUT       go test -timeout (default: 15m)
#   FUZZTIME              per fuzz target (default: 30s)
#   SOAK_OPS              ops of the soak (default: 2000)
#   SKIP_SETUP=1          do not run scripts/setup.sh first
#   SKIP_WHEEL=1          leave out stage 6 (it downloads a second torch the first time)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

START=$SECONDS
summary=()
failed=0

# stage NAME COMMAND...: runs one stage, records its result and time.
stage() {
  local name="$1" t0=$SECONDS rc=0
  shift
  printf '\n=== %s\n' "$name" >&2
  "$@" || rc=$?
  local took=$((SECONDS - t0))
  if ((rc == 0)); then
    summary+=("ok    ${took}s  $name")
  else
    summary+=("FAIL  ${took}s  $name (exit $rc)")
    failed=1
  fi
}

check_gofmt() {
  local files unformatted
  mapfile -t files < <(find . \( -path ./.venv -o -path ./.git -o -path ./build \) -prune -o -name '*.go' -print)
  ((${#files[@]})) || return 0
  unformatted="$(gofmt -l "${files[@]}")"
  if [[ -n "$unformatted" ]]; then
    echo "gofmt: these files need formatting:" >&2
    echo "$unformatted" >&2
    return 1
  fi
}

check_ruff() {
  .venv/bin/ruff check .
}

check_clang_format() {
  local files
  mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp')
  ((${#files[@]})) || return 0
  .venv/bin/clang-format --dry-run -Werror "${files[@]}" ||
    { echo "clang-format: run .venv/bin/clang-format -i on the files above" >&2; return 1; }
}

# go test -json through scripts/go_test_report.py: go test's usual lines, then every
# skipped test with its reason.
go_test() {
  env CGO_ENABLED=1 go test -json -count=1 -timeout "${GO_TEST_TIMEOUT:-15m}" "$@" |
    .venv/bin/python scripts/go_test_report.py
}

# The packages whose tests trim their matrices under the race detector.
go_test_full_matrices() {
  local pkgs
  mapfile -t pkgs < <(grep -rl --include='*_test.go' -e 'raceEnabled' . | xargs -n1 dirname | sort -u)
  go_test "${pkgs[@]}"
}

run_pytest() {
  local rc=0
  # shellcheck disable=SC2086  # PYTEST_ARGS is split into words on purpose
  .venv/bin/python -m pytest tests/py -q -ra --durations=15 ${PYTEST_ARGS:-} || rc=$?
  if ((rc == 5)); then
    echo "pytest collected no tests: tests/py must not be empty" >&2
  fi
  return "$rc"
}

if [[ "${SKIP_SETUP:-0}" != 1 ]]; then
  # Nothing else can run without the build.
  ./scripts/setup.sh
fi

stage "gofmt" check_gofmt
stage "go vet ./..." go vet ./...
stage "ruff (Python)" check_ruff
stage "clang-format (C/C++)" check_clang_format
stage "go test -race ./..." go_test -race ./...
stage "go test, full matrices (no -race)" go_test_full_matrices
stage "fuzz (${FUZZTIME:-30s} per target)" env FUZZTIME="${FUZZTIME:-30s}" PARALLEL=2 ./scripts/fuzz.sh
stage "soak (${SOAK_OPS:-2000} ops)" .venv/bin/python scripts/soak.py --ops "${SOAK_OPS:-2000}"
stage "pytest tests/py (backend: ${HCCL_GO_TEST_BACKEND:-hccl_go})" run_pytest
if [[ "${SKIP_WHEEL:-0}" == 1 ]]; then
  echo "=== wheel: skipped (SKIP_WHEEL=1)" >&2
  summary+=("skip      wheel (SKIP_WHEEL=1)")
else
  stage "wheel (build, install without Go, main job per torch)" ./scripts/wheel.sh --test
fi

printf '\n=== summary (%ss in all)\n' "$((SECONDS - START))" >&2
printf '%s\n' "${summary[@]}" >&2
exit "$failed"
