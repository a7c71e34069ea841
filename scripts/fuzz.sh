#!/usr/bin/env bash
# Runs every fuzz target that decodes bytes from the network, one after the
# other, for FUZZTIME each (default 10m: the acceptance run):
#
#   scripts/fuzz.sh                 # 10 minutes per target
#   FUZZTIME=3m scripts/fuzz.sh     # shorter
#   PARALLEL=2 scripts/fuzz.sh      # fuzzing workers per target (default: all CPUs)
#
# Targets: transport/tcp FuzzFrameHeader (frame headers) and FuzzHandshake
# (challenge, hello and welcome messages), pgbackend FuzzControlMessage (the
# peer monitor's messages). Inputs that crash a target are written to its
# testdata/fuzz/<Target>/ directory: commit them with the fix, they become
# regression tests that plain `go test` runs. Interesting (non-crashing) inputs
# stay in the Go build cache ($(go env GOCACHE)/fuzz); copy some into testdata to
# grow the seed corpus.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
FUZZTIME="${FUZZTIME:-10m}"
PARALLEL_FLAG=()
if [[ -n "${PARALLEL:-}" ]]; then
  PARALLEL_FLAG=(-parallel "$PARALLEL")
fi

run() {
  local pkg=$1 target=$2
  echo "=== $target ($pkg) for $FUZZTIME" >&2
  go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "${PARALLEL_FLAG[@]}" "$pkg"
}

run ./transport/tcp FuzzFrameHeader
run ./transport/tcp FuzzHandshake
run ./pgbackend FuzzControlMessage
echo "=== no crash in any target" >&2
