#!/usr/bin/env bash
# Sets the machine up (scripts/setup.sh) and runs the example training job:
# DDP on scikit-learn's digits data set, 2 processes on this host, launched by torchrun.
#
# Any argument is passed on to examples/train_digits.py, e.g.
#   ./scripts/run_example.sh --backend gloo --model cnn --epochs 5
# Environment: NPROC (processes, default 2), SKIP_SETUP=1 (do not run setup.sh).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if [[ "${SKIP_SETUP:-0}" != 1 ]]; then
  ./scripts/setup.sh
fi

# Rendezvous on loopback only, on a port that is free now.
PORT="$(.venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
exec .venv/bin/torchrun --nnodes=1 --nproc_per_node="${NPROC:-2}" \
  --master_addr=127.0.0.1 --master_port="$PORT" \
  examples/train_digits.py "$@"
