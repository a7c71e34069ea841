#!/usr/bin/env bash
# Sets the machine up (scripts/setup.sh) and runs every test of the project:
#   1. gofmt and go vet over the Go code,
#   2. go test -race ./...   (unit tests, and tests/go/, which drives the C API test),
#   3. pytest tests/py       (the PyTorch backend, in spawned multi-process jobs).
# Every stage runs even when an earlier one failed; the summary at the end lists
# each stage's result and time, and the exit status is non-zero if any failed.
#
# Environment:
#   HCCL_GO_TEST_BACKEND  backend under test in tests/py (default: hccl_go; "gloo" checks the tests)
#   PYTEST_ARGS           extra arguments for pytest (e.g. "-k all_reduce -x")
#   GO_TEST_TIMEOUT       go test -timeout (default: 15m)
#   SKIP_SETUP=1          do not run scripts/setup.sh first
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
stage "go test -race ./..." env CGO_ENABLED=1 go test -race -count=1 -timeout "${GO_TEST_TIMEOUT:-15m}" ./...
stage "pytest tests/py (backend: ${HCCL_GO_TEST_BACKEND:-hccl_go})" run_pytest

printf '\n=== summary (%ss in all)\n' "$((SECONDS - START))" >&2
printf '%s\n' "${summary[@]}" >&2
exit "$failed"
