#!/usr/bin/env bash
# Sets the machine up (scripts/setup.sh) and runs every test of the project:
#   1. gofmt and go vet over the Go code,
#   2. go test -race ./...   (unit tests, and tests/go/, which drives the C API test),
#   3. pytest tests/py       (the PyTorch backend, in spawned multi-process jobs).
#
# Environment:
#   HCCL_GO_TEST_BACKEND  backend under test in tests/py (default: hccl_go; "gloo" checks the tests)
#   PYTEST_ARGS           extra arguments for pytest (e.g. "-k all_reduce -x")
#   GO_TEST_TIMEOUT       go test -timeout (default: 10m)
#   SKIP_SETUP=1          do not run scripts/setup.sh first
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

step() { printf '\n=== %s\n' "$*" >&2; }
START=$SECONDS

if [[ "${SKIP_SETUP:-0}" != 1 ]]; then
  step "set-up"
  ./scripts/setup.sh
fi

step "gofmt"
mapfile -t go_files < <(find . \( -path ./.venv -o -path ./.git -o -path ./build \) -prune -o -name '*.go' -print)
if ((${#go_files[@]})); then
  unformatted="$(gofmt -l "${go_files[@]}")"
  if [[ -n "$unformatted" ]]; then
    echo "gofmt: these files need formatting:" >&2
    echo "$unformatted" >&2
    exit 1
  fi
fi

step "go vet ./..."
go vet ./...

step "go test -race ./..."
CGO_ENABLED=1 go test -race -count=1 -timeout "${GO_TEST_TIMEOUT:-10m}" ./...

step "pytest tests/py (backend: ${HCCL_GO_TEST_BACKEND:-hccl_go})"
set +e
# shellcheck disable=SC2086  # PYTEST_ARGS is split into words on purpose
.venv/bin/python -m pytest tests/py -q -ra --durations=15 ${PYTEST_ARGS:-}
rc=$?
set -e
if ((rc == 5)); then
  echo "pytest collected no tests: tests/py must not be empty" >&2
  exit 1
fi
if ((rc != 0)); then
  exit "$rc"
fi

step "all tests passed in $((SECONDS - START)) s"
