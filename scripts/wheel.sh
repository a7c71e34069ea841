#!/usr/bin/env bash
# Builds a binary wheel of torch_hccl_go that installs without Go or a
# compiler, for several torch minor versions at once, and tests it.
#
#   scripts/wheel.sh [--test]
#
# One libhccl_go.so (the one scripts/setup.sh builds) and one C++ extension per torch minor
# version, each compiled in its own virtual environment with that torch
# (build/wheel/venv-torchX.Y; .venv serves for the torch it holds). The wheel
# lands in dist/ and requires exactly the torch minor versions it carries.
# --test installs it into a fresh environment per torch version, with no
# compiler or Go on PATH and nothing but python in the environment, and runs
# the main job (examples/train_digits.py on 2 ranks) there; with the torch
# versions other than .venv's, also tests/py's collective and semantics tests.
#
# Environment:
#   HCCL_GO_WHEEL_TORCH  torch minor versions to build for (default: "2.14 2.15")
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
WORK="$ROOT/build/wheel"
TORCHES="${HCCL_GO_WHEEL_TORCH:-2.14 2.15}"
TEST=0
[[ "${1:-}" == "--test" ]] && TEST=1

log() { printf '[wheel] %s\n' "$*" >&2; }

./scripts/setup.sh
MAIN_TORCH="$(.venv/bin/python -c 'import torch; print(".".join(torch.__version__.split(".")[:2]))')"

# venv_for V: a Python whose torch is V.* (created on first use).
venv_for() {
  local v="$1"
  if [[ "$v" == "$MAIN_TORCH" ]]; then
    echo "$ROOT/.venv"
    return
  fi
  local venv="$WORK/venv-torch$v"
  if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import torch, sys; sys.exit(not torch.__version__.startswith('$v.'))" 2>/dev/null; then
    log "creating $venv (torch==$v.*)"
    rm -rf "$venv"
    python3 -m venv "$venv"
  fi
  # Quick when everything is there already.
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "torch==$v.*" numpy scikit-learn pytest \
    setuptools wheel ninja >&2
  echo "$venv"
}

rm -rf "$WORK/lib" "$WORK/ext" "$WORK/wheelhouse"
mkdir -p "$WORK/lib" "$WORK/ext" "$WORK/wheelhouse"
# Every build below ships the library setup.sh has just built from this tree (a copy:
# the builds replace the tree's own).
cp python/torch_hccl_go/lib/libhccl_go.so "$WORK/lib/"
export HCCL_GO_PREBUILT_LIB="$WORK/lib/libhccl_go.so"

extras=()
for v in $TORCHES; do
  [[ "$v" == "$MAIN_TORCH" ]] && continue
  py="$(venv_for "$v")/bin/python"
  log "building the extension for torch $v"
  "$py" setup.py --quiet build_ext --build-lib "$WORK/ext/$v" >"$WORK/ext-$v.log" 2>&1 ||
    { cat "$WORK/ext-$v.log" >&2; exit 1; }
  extras+=("$(ls "$WORK/ext/$v"/torch_hccl_go/_C_torch*.so)")
done

log "building the wheel with torch $MAIN_TORCH${extras:+ and the extensions ${extras[*]##*/}}"
HCCL_GO_WHEEL_EXTENSIONS="$(IFS=:; echo "${extras[*]:-}")" \
  .venv/bin/python -m pip wheel --quiet --disable-pip-version-check --no-build-isolation --no-deps \
  -w "$WORK/wheelhouse" .
WHEEL="$(ls "$WORK"/wheelhouse/torch_hccl_go-*.whl)"
mkdir -p dist
cp "$WHEEL" dist/
WHEEL="dist/${WHEEL##*/}"
log "built $WHEEL:"
.venv/bin/python - "$WHEEL" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for n in sorted(z.namelist()):
        if n.endswith(".so"):
            print(f"  {n}")
        if n.endswith("METADATA"):
            print("  " + "\n  ".join(l for l in z.read(n).decode().splitlines() if l.startswith("Requires-Dist")))
PY
((TEST)) || exit 0

# test_in V: a fresh environment that sees torch V from its build environment
# (a .pth line: the same files, no second 5 GB download) but not the
# checkout's editable install, the wheel installed from the file alone, and
# the main job run with only that environment's bin on PATH.
test_in() {
  local v="$1" tvenv="$WORK/test-torch$1" torch_site site
  torch_site="$("$(venv_for "$v")/bin/python" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))')"
  rm -rf "$tvenv"
  python3 -m venv "$tvenv"
  # The venv's own old setuptools would hide the newer one torch requires.
  "$tvenv/bin/python" -m pip uninstall --quiet --yes setuptools
  site="$("$tvenv/bin/python" -c 'import site; print(site.getsitepackages()[0])')"
  echo "$torch_site" >"$site/torch-from-build-env.pth"
  "$tvenv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index "$ROOT/$WHEEL"
  log "torch $v: running the main job from the installed wheel, without go, gcc or cc on PATH"
  (
    cd "$WORK"  # not the checkout: its python/ must not shadow the installed package
    env -i HOME="$HOME" PATH="$tvenv/bin" LANG=C.UTF-8 \
      "$tvenv/bin/python" - "$ROOT/examples/train_digits.py" <<'PY'
import os, shutil, subprocess, sys
missing = [t for t in ("go", "gcc", "cc", "g++") if shutil.which(t)]
assert not missing, f"on PATH: {missing}"
import torch, torch_hccl_go
where = os.path.dirname(torch_hccl_go.__file__)
assert "site-packages" in where, where
print(f"torch {torch.__version__}, torch_hccl_go {torch_hccl_go.__version__} from {where}", flush=True)
cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", sys.argv[1], "--epochs", "1"]
sys.exit(subprocess.run(cmd).returncode)
PY
  )
  # Every collective against its reference, and the semantics checks, with this torch too
  # (scripts/test.sh runs all of tests/py against .venv's torch).
  if [[ "$v" != "$MAIN_TORCH" ]]; then
    log "torch $v: tests/py/test_collectives.py and test_semantics.py from the installed wheel"
    env -i HOME="$HOME" PATH="$tvenv/bin" LANG=C.UTF-8 \
      "$tvenv/bin/python" -m pytest -q -p no:cacheprovider "$ROOT/tests/py/test_collectives.py" \
      "$ROOT/tests/py/test_semantics.py"
  fi
}
for v in $TORCHES; do
  test_in "$v"
done
log "the wheel installs and runs the main job with torch ${TORCHES// /, }"
