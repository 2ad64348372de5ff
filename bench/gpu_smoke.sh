#!/bin/sh
# GPU smoke test of the nccl backend (docs/gpu.md): the one script to run on
# the first real box. Builds pcie-tune, runs `make test` (and fails if it
# fails), then measures with NCCL on the GPUs: with one GPU NCCL's default in
# graph and eager mode (NCCL never asks a tuner for one rank, so forced
# candidates must come back unsupported); with two or more a small sweep on
# GPUs 0-1 in both process models. Prints everything to paste back between
# the PASTE BACK markers: machine, profile(s) with provenance (library files
# loaded, comm channels, transports, NCCL log lines), and the verdict.
#
#   sh bench/gpu_smoke.sh [BUILD_DIR] [--nccl-lib PATH]    (default build-smoke)
set -u
BUILD=${1:-build-smoke}
[ $# -gt 0 ] && shift
cd "$(dirname "$0")/.." || exit 1
say() { printf '%s\n' "$*"; }
OUT=$BUILD/smoke
fail() { say "SMOKE FAIL: $*"; say "===== PASTE BACK END ====="; exit 1; }

say "===== PASTE BACK BEGIN ====="
say "== machine"
nvidia-smi -L 2>&1 | head -8 || say "nvidia-smi: not available"
nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1 | head -1
say "== build ($BUILD)"
if ! make BUILD="$BUILD" -j"$(nproc)" all >"$BUILD.log" 2>&1; then tail -20 "$BUILD.log"; fail "build"; fi
say "== make test"
if make BUILD="$BUILD" -j"$(nproc)" test >"$BUILD.test.log" 2>&1; then say "make test: passed"
else grep -E '^==|Checks|:F:|:E:' "$BUILD.test.log" | tail -40; fail "make test exited non-zero"; fi
mkdir -p "$OUT"
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
say "== $NGPU GPU(s)"
[ "$NGPU" -ge 1 ] || fail "no GPU visible"
CLI=$BUILD/pcie-tune
ok=1
if [ "$NGPU" -eq 1 ]; then
  # One rank: the candidates are unsupported by design; NCCL's default is measured.
  if ! timeout 900 "$CLI" profile --backend nccl --gpus 0 --both --sizes 4K:4M --algos ring --protos ll,simple \
      --channels 1,2 --reps 5 --full --force --out "$OUT/one.cfg" "$@" 2>"$OUT/one.err"; then
    cat "$OUT/one.err"; ok=0
  fi
  cat "$OUT/one.cfg" 2>/dev/null
else
  for model in per-gpu single; do
    if ! timeout 1800 "$CLI" profile --backend nccl --gpus 0-1 --process-model $model --both --sizes 4K:64M \
        --algos ring,tree --protos ll,simple --reps 5 --force --out "$OUT/$model.cfg" "$@" 2>"$OUT/$model.err"; then
      cat "$OUT/$model.err"; ok=0
    fi
    say "== profile ($model)"
    cat "$OUT/$model.cfg" 2>/dev/null
    "$CLI" check "$OUT/$model.cfg" 2>&1 | tail -5
  done
fi
[ "$ok" -eq 1 ] || fail "a measurement run failed (see above)"
grep -q 'state = "complete"' "$OUT"/*.cfg || fail "no complete profile"
grep -q 'comm_channels = [1-9]' "$OUT"/*.cfg || say "WARNING: NCCL's INFO lines gave no channel count"
say "SMOKE OK"
say "===== PASTE BACK END ====="
