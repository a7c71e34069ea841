#!/usr/bin/env bash
# Idempotent set-up of a development machine (Debian, Python 3.11, Go, gcc):
#   1. create .venv if it is missing,
#   2. install the Python dependencies of requirements-dev.txt,
#   3. build and install hccl-go in editable mode (Go c-shared library + C++
#      extension), skipped when no source changed since the last build.
#
# Environment:
#   PYTHON                  interpreter used to create .venv (default: python3)
#   HCCL_GO_FORCE_REBUILD=1 rebuild the package even if the sources are unchanged
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"

log() { printf '[setup] %s\n' "$*" >&2; }

if [[ ! -x "$PY" ]]; then
  log "creating $VENV"
  "${PYTHON:-python3}" -m venv "$VENV"
fi

# pip prints nothing but "Requirement already satisfied" when all is in place,
# so this step is cheap on a machine that is already set up.
log "installing Python dependencies (requirements-dev.txt)"
"$PY" -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt

if [[ ! -f setup.py && ! -f pyproject.toml ]]; then
  log "error: no setup.py or pyproject.toml in $ROOT: cannot build torch_hccl_go"
  exit 1
fi

# A hash of everything the build reads; the editable install is redone only
# when it changes (or when the package cannot be imported).
source_hash() {
  {
    find . \( -path ./.venv -o -path ./.git -o -path ./build -o -path ./tests \) -prune -o \
      -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' -o -name '*.h' \
      -o -name '*.hpp' -o -name '*.cpp' -o -name '*.cc' -o -name '*.c' \
      -o -name 'setup.py' -o -name 'pyproject.toml' -o -name 'setup.cfg' \) -print |
      LC_ALL=C sort | xargs -r sha256sum
    "$PY" -c 'import torch; print(torch.__version__)'
  } | sha256sum | cut -d' ' -f1
}

STAMP="$VENV/.hccl_go_build_stamp"
HASH="$(source_hash)"
if [[ "${HCCL_GO_FORCE_REBUILD:-0}" != 1 && -f "$STAMP" && "$(cat "$STAMP")" == "$HASH" ]] &&
  "$PY" -c 'import torch_hccl_go' >/dev/null 2>&1; then
  log "torch_hccl_go is up to date"
else
  log "building torch_hccl_go (pip install --no-build-isolation -e .)"
  rm -f "$STAMP"
  "$PY" -m pip install --quiet --disable-pip-version-check --no-build-isolation -e .
  "$PY" -c 'import torch_hccl_go' || {
    log "error: the build finished but 'import torch_hccl_go' fails"
    exit 1
  }
  echo "$HASH" >"$STAMP"
fi
log "ready: $VENV"
