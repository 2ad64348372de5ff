#!/usr/bin/env bash
# GPU smoke test of `pcie-tune profile --backend nccl` (docs/gpu.md): the
# script to run first on a machine with a GPU. Bounded by SMOKE_BUDGET_S
# (default 450 s); ends with one line
#   GPU-SMOKE SUMMARY: PASS=.. FAIL=.. SKIP=.. FINDINGS=.. elapsed=..s failed=[..]
# and exits 0 only without a FAIL. Never part of `make test` or CI.
#
#   bash bench/gpu_smoke.sh [BUILD_DIR]        (default build-smoke, in this tree)
#
# Steps: the machine (GPUs, compute mode); build; the measure suites (device
# double, with the caller's NCCL_*/PTDOUBLE_*/PCIE_TUNER_* variables unset);
# a probe through dlopen (bench/smoke/probe.c: does a legacy-stream D2D
# cudaMemcpy return early and race a non-blocking stream; a 1-rank graph
# all-reduce captured, uploaded, timed and checked; did NCCL load the
# plugin); four profiles (graph, eager, in-place, single process): on one
# GPU NCCL's default is measured in each and, since NCCL never asks a tuner
# on one rank, every forced candidate is unsupported and nothing is written
# (said so); on two or more, on GPUs 0-1: complete, the plugin in NCCL's
# log, transports, the buffers recorded, plausible latencies; the scratch
# directory removed; two ranks on GPU 0 (--same-gpu-ranks: the tuner is
# asked, ring/ll, ring/simple, tree/ll at 14 KiB and 1 MiB forced, graph,
# eager, in-place, NCCL_CUMEM_ENABLE=0); Ctrl-C while the worker starts, Ctrl-C and SIGKILL
# mid-sweep: exit status, no worker or rank left, none left on the GPU
# (nvidia-smi). Only processes this script started are signalled.
#
# Knobs: SMOKE_NCCL_LIB (the libnccl to measure; default found like
# pcie-tune finds it), SMOKE_DOUBLE=1 (a dry run through the device double:
# SMOKE_NCCL_LIB is then the double, built by `make test`; SMOKE_DOUBLE_GPUS
# its device count, 1 or 2), SMOKE_BUDGET_S.
set -u
T0=$(date +%s)
BUDGET=${SMOKE_BUDGET_S:-450}
PASS=0 FAIL=0 SKIP=0 FIND=0 FAILED=""
left() { echo $((BUDGET - ($(date +%s) - T0))); }
need() { [ "$(left)" -ge "$1" ]; }
tmo() { local t=$1 l=$(($(left) - 20)); [ "$l" -lt "$t" ] && t=$l; [ "$t" -lt 5 ] && t=5; echo "$t"; }
pass() { PASS=$((PASS + 1)); echo "PASS: $*"; }
fail() { FAIL=$((FAIL + 1)); FAILED="$FAILED $1"; echo "FAIL: $*"; }
skip() { SKIP=$((SKIP + 1)); echo "SKIP: $*"; }
finding() { FIND=$((FIND + 1)); echo "FINDING: $*"; }
info() { echo "INFO: $*"; }
step() { echo; echo "=== $* (t=$(($(date +%s) - T0))s)"; }
summary() {
  echo
  echo "GPU-SMOKE SUMMARY: PASS=$PASS FAIL=$FAIL SKIP=$SKIP FINDINGS=$FIND elapsed=$(($(date +%s) - T0))s failed=[${FAILED# }]"
}

cd "$(dirname "$0")/.." || exit 1
B=$(readlink -f "${1:-build-smoke}")
W=$(mktemp -d "${TMPDIR:-/tmp}/gpu-smoke.XXXXXX")
BG=""
trap 'for p in $BG; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$W"' EXIT
mkdir -p "$W/tmp" "$W/empty"
DOUBLE=${SMOKE_DOUBLE:-0}
DENV=() # the measured runs' environment: in a dry run, the double's box
HI_US=500 # a 1-rank all-reduce is a device-local copy: a few us per op on a real GPU
NGPU=1
if [ "$DOUBLE" = 1 ]; then
  NGPU=${SMOKE_DOUBLE_GPUS:-1}
  DENV=(PTDOUBLE_BOX=consumer-2x PTDOUBLE_DEVICES=$NGPU)
  HI_US=100000
fi

step "machine"
uname -a
if [ "$DOUBLE" = 1 ]; then
  info "dry run through the device double: no GPU is checked"
elif command -v nvidia-smi >/dev/null 2>&1; then
  timeout 20 nvidia-smi --query-gpu=name,pci.bus_id,driver_version,compute_mode,clocks.max.sm --format=csv 2>&1
  NGPU=$(timeout 20 nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  [ "$NGPU" -ge 1 ] && pass gpu-visible "$NGPU GPU(s)" || fail gpu-visible "nvidia-smi lists no GPU"
  case "$(timeout 20 nvidia-smi --query-gpu=compute_mode --format=csv,noheader -i 0 2>/dev/null)" in
  *Exclusive*) info "exclusive compute mode: a restarted worker must wait for the killed one's ranks";;
  esac
else
  fail gpu-visible "no nvidia-smi"
fi

step "build ($B)"
if timeout "$(tmo 240)" make BUILD="$B" -j"$(nproc)" all >"$W/build.log" 2>&1; then pass build "make all"
else tail -25 "$W/build.log"; fail build "make all"; summary; exit 1; fi
CLI=$B/pcie-tune
PLUGIN=$B/libnccl-tuner-pcie.so

step "measure suites (device double)"
UNSET=()
for v in $(env | awk -F= '/^(NCCL_|PTDOUBLE_|PCIE_TUNER_)/{print $1}'); do UNSET+=(-u "$v"); done
if need 200 && env ${UNSET[@]+"${UNSET[@]}"} timeout "$(tmo 200)" make BUILD="$B" -j"$(nproc)" test \
    TESTS="test_measure_proto test_measure_gpu test_measure_isolate test_measure_double test_measure_sizes" \
    >"$W/test.log" 2>&1; then
  pass measure-suites "$(grep -c '100%' "$W/test.log") suites at 100%"
else
  grep -E '^==|Checks|:F:|:E:' "$W/test.log" | tail -20
  fail measure-suites "the measure suites failed or ran out of time"
fi

step "libraries"
NCCL=${SMOKE_NCCL_LIB:-}
[ -z "$NCCL" ] && [ "$DOUBLE" = 1 ] && NCCL=$B/test/double/libnccl-double-cudart-nccl.so
[ -z "$NCCL" ] && NCCL=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')
[ -z "$NCCL" ] && for f in /usr/local/cuda/lib64/libnccl.so.2 /usr/lib/x86_64-linux-gnu/libnccl.so.2; do
  [ -e "$f" ] && NCCL=$f && break
done
[ -z "$NCCL" ] && NCCL=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
CUDART=""
if [ -n "$NCCL" ] && [ -e "$NCCL" ]; then
  NCCL=$(readlink -f "$NCCL")
  pass nccl-found "$NCCL"
  if [ "$DOUBLE" = 1 ]; then CUDART=$NCCL
  else
    for f in "$(dirname "$NCCL")"/libcudart.so* "$(dirname "$NCCL")"/../../cuda_runtime/lib/libcudart.so* \
      /usr/local/cuda/lib64/libcudart.so.1[0-9]*; do [ -e "$f" ] && CUDART=$(readlink -f "$f") && break; done
    [ -z "$CUDART" ] && CUDART=$(ldconfig -p 2>/dev/null | awk '/libcudart\.so/{print $NF; exit}')
  fi
  info "cudart for the probe: ${CUDART:-none found}"
else
  NCCL=""
  fail nccl-found "no libnccl.so.2 (give SMOKE_NCCL_LIB=PATH)"
fi
NLIB=()
[ -n "$NCCL" ] && NLIB=(--nccl-lib "$NCCL")

step "probe: legacy-stream copy ordering, 1-rank graph all-reduce, plugin"
PROBE_US=""
if [ -z "$NCCL" ] || [ -z "$CUDART" ]; then skip probe "no libnccl or libcudart"
elif ! cc -std=c11 -D_GNU_SOURCE -O2 -o "$W/probe" bench/smoke/probe.c -ldl >"$W/probe.cc" 2>&1; then
  cat "$W/probe.cc"; fail probe-build "cc bench/smoke/probe.c"
else
  env ${DENV[@]+"${DENV[@]}"} NCCL_TUNER_PLUGIN="$PLUGIN" PCIE_TUNER_PROFILE="$W/empty" NCCL_DEBUG=INFO \
    NCCL_DEBUG_FILE="$W/probe.%p.log" timeout "$(tmo 90)" "$W/probe" "$CUDART" "$NCCL" "$PLUGIN" >"$W/probe.out" 2>&1
  rc=$?
  cat "$W/probe.out"
  [ $rc -eq 0 ] && pass probe-run "exit 0" || fail probe-run "exit $rc"
  grep -q 'plugin_loaded_by_nccl 1' "$W/probe.out" && pass probe-plugin "NCCL loaded the plugin" ||
    fail probe-plugin "NCCL did not load $PLUGIN"
  n=$(grep -c graph_allreduce_1rank "$W/probe.out")
  wrong=$(awk '/graph_allreduce_1rank/ && $NF != 0' "$W/probe.out" | wc -l)
  [ "$n" -eq 4 ] && [ "$wrong" -eq 0 ] && pass probe-graph "4 sizes captured, replayed, exact" ||
    fail probe-graph "$n sizes, $wrong with wrong outputs"
  PROBE_US=$(awk '/graph_allreduce_1rank/{printf "%s ", $5}' "$W/probe.out")
  bad=$(awk -v hi=$HI_US '/graph_allreduce_1rank/ && ($5 < 0.1 || $5 > hi)' "$W/probe.out" | wc -l)
  [ "$n" -eq 4 ] && [ "$bad" -eq 0 ] && pass probe-timing "us/op $PROBE_US" || fail probe-timing "implausible us/op: $PROBE_US"
  st=$(awk '/d2d_stale_read/{print $2}' "$W/probe.out") nr=$(awk '/d2d_notready/{print $2}' "$W/probe.out")
  if [ -n "$st" ] && { [ "$st" -gt 0 ] || [ "$nr" -gt 0 ]; }; then
    finding "a legacy-stream D2D cudaMemcpy returned early ($nr/5) and a non-blocking stream read old data ($st/5): what test/double models and --in-place avoids"
  elif [ -n "$st" ]; then
    info "the D2D copy looked synchronous here; CUDA does not promise it"
  fi
fi

# pcie-tune processes among the given pids that are still running.
alive_of() {
  local p out=""
  for p in "$@"; do
    [ -r "/proc/$p/cmdline" ] && tr '\0' ' ' <"/proc/$p/cmdline" | grep -q pcie-tune &&
      ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null && out="$out $p"
  done
  echo $out
}
# Every descendant of a pid.
descendants() {
  local all front=$1 next out="" p c
  all=$(for f in /proc/[0-9]*/stat; do sed -E 's/^([0-9]+) \(.*\) . ([0-9]+) .*/\1 \2/' "$f" 2>/dev/null; done)
  while [ -n "$front" ]; do
    next=""
    for p in $front; do
      for c in $(echo "$all" | awk -v p="$p" '$2 == p {print $1}'); do next="$next $c"; out="$out $c"; done
    done
    front=$next
  done
  echo $out
}

SIZES=14336,114688,1M,2M
COMMON=(--backend nccl "${NLIB[@]}" --sizes $SIZES --algos ring --protos ll,simple --channels 1,2
  --reps 5 --full --force --timeout 60)
declare -A DEF
# One GPU: NCCL never asks a tuner on one rank, so the sweep measures
# NCCL's default in every mode and model, forces nothing, and refuses to
# write a profile of nothing (docs/gpu.md). Two GPUs or more: a profile.
profile_run() { # name, options...
  local name=$1 f=$W/$1.cfg gpus=0
  shift
  [ "$NGPU" -ge 2 ] && gpus=0-1
  if ! need 45; then skip "profile-$name" "no time left"; return; fi
  step "profile --gpus $gpus $*"
  env ${DENV[@]+"${DENV[@]}"} TMPDIR="$W/tmp" timeout "$(tmo 150)" "$CLI" profile "${COMMON[@]}" --gpus $gpus "$@" \
    --out "$f" >"$W/$name.out" 2>"$W/$name.err"
  local rc=$?
  if [ $gpus = 0 ]; then
    if [ $rc -eq 1 ] && grep -q "NCCL never asks a tuner on a one-rank communicator" "$W/$name.err" && [ ! -e "$f" ]; then
      pass "profile-$name" "one rank: NCCL's default measured, every forced candidate unsupported, nothing written"
      DEF[$name]=measured
    else
      tail -8 "$W/$name.err"
      fail "profile-$name" "exit $rc on one GPU, want 1 with the one-rank message"
    fi
    return
  fi
  if [ $rc -ne 0 ] || ! grep -q 'state = "complete"' "$f" 2>/dev/null; then
    tail -8 "$W/$name.err"
    fail "profile-$name" "exit $rc, no complete profile"
    return
  fi
  pass "profile-$name" "complete"
  grep -E 'nccl_library|cudart_library|cuda_driver|process_model|comm_channels|transports|buffers|graph_register|placement' "$f" |
    head -12 | sed 's/^ */  /'
  grep -q PcieTuner "$f" && pass "plugin-$name" "the plugin's line in NCCL's log" || fail "plugin-$name" "no PcieTuner line"
  grep -q 'buffers = "cudaMalloc"' "$f" && grep -q 'graph_register = ' "$f" &&
    pass "buffers-$name" "provenance.buffers and graph_register recorded" || fail "buffers-$name" "buffers not recorded"
  grep -q 'transports = \[ "' "$f" && pass "transports-$name" "recorded after the first collective" ||
    fail "transports-$name" "no transports recorded"
  local d v ok=1
  d=$(grep -m1 'nccl_default = (' "$f" | sed -E 's/.*\( *(.*) *\);.*/\1/; s/[",]/ /g')
  DEF[$name]=$d
  for v in $d; do awk -v v="$v" 'BEGIN{exit !(v + 0 >= 0.1 && v + 0 <= 100000)}' || ok=0; done
  [ "$(echo $d | wc -w)" -eq 4 ] && [ $ok = 1 ] && pass "timing-$name" "NCCL default us/op: $d" ||
    fail "timing-$name" "NCCL default not measured and plausible at every size: '$d'"
  grep -q '"wrong"\|"crash"\|"hang"' "$f" && finding "$name: a candidate was wrong, crashed or hung (see $f)"
  "$CLI" show "$f" | tail -12
}
profile_run graph --graph
profile_run eager --eager
profile_run inplace --graph --in-place
profile_run single --graph --process-model single
[ -z "$(ls -A "$W/tmp")" ] && pass scratch-clean "nothing left in TMPDIR" ||
  fail scratch-clean "left in TMPDIR: $(ls -A "$W/tmp" | head -5 | tr '\n' ' ')"

# Two ranks on GPU 0 (issue 26 §6): NCCL refuses two ranks of one host on
# one GPU and never asks a tuner on one rank; --same-gpu-ranks gives each
# rank process its own NCCL_HOSTID (two nodes over sockets on lo), so the
# forcing path runs on one GPU. Correctness and states only: the tuner is
# asked, forced candidates run, LL128 is unsupported, every replay right.
same_gpu_run() { # name, options...
  local name=$1 f=$W/$1.cfg
  shift
  need 45 || { skip "same-gpu-$name" "no time left"; return; }
  step "profile --gpus 0,0 --same-gpu-ranks $*"
  env ${DENV[@]+"${DENV[@]}"} TMPDIR="$W/tmp" timeout "$(tmo 150)" "$CLI" profile --backend nccl "${NLIB[@]}" \
    --gpus 0,0 --same-gpu-ranks --sizes 14336,1048576 --algos ring,tree --protos ll,ll128,simple --channels 1 \
    --reps 3 --full --force --timeout 60 "$@" --out "$f" >"$W/$name.out" 2>"$W/$name.err"
  local rc=$?
  if [ $rc -ne 0 ] || ! grep -q 'state = "complete"' "$f" 2>/dev/null; then
    tail -8 "$W/$name.err"
    fail "same-gpu-$name" "exit $rc, no complete profile"
    return
  fi
  pass "same-gpu-$name" "complete on one GPU as two nodes"
  grep -q PcieTuner "$f" && pass "same-gpu-tuner-$name" "the plugin's line in NCCL's log" ||
    fail "same-gpu-tuner-$name" "no PcieTuner line"
  local ok wrong ll128
  ok=$(grep -cE 'algo = "(ring|tree)"; proto = "(ll|simple)"' "$f")
  wrong=$(grep -c '"wrong"\|"crash"\|"hang"' "$f")
  ll128=$(grep -E 'proto = "ll128"' -A1 "$f" | grep -c '"unsupported"')
  [ "$ok" -ge 1 ] && ! grep -A1 -E 'proto = "(ll|simple)"' "$f" | grep -q '"unsupported"' &&
    pass "same-gpu-forced-$name" "ring/ll, ring/simple, tree/ll forced and measured" ||
    fail "same-gpu-forced-$name" "a forced LL/Simple candidate did not run"
  [ "$wrong" -eq 0 ] && pass "same-gpu-right-$name" "every timed replay checked right" ||
    fail "same-gpu-right-$name" "$wrong wrong/crash/hang points (see $f)"
  [ "$ll128" -ge 1 ] && pass "same-gpu-ll128-$name" "LL128 unsupported (NCCL disables it here)" ||
    finding "same-gpu-$name: LL128 was not unsupported"
}
if [ "$NGPU" -ge 1 ]; then
  same_gpu_run samegpu-graph --graph
  same_gpu_run samegpu-eager --eager
  same_gpu_run samegpu-inplace --graph --in-place
  NCCL_CUMEM_ENABLE=0 same_gpu_run samegpu-nocumem --graph
fi

# A profile stopped by a signal: exit status, nobody left behind (also on the GPU).
signal_run() { # name signal want-exit extra-env...
  local name=$1 sig=$2 want=$3 p d i rc alive
  shift 3
  need 50 || { skip "signal-$name" "no time left"; return; }
  step "$sig to a running profile ($name)"
  local gpus=0
  [ "$NGPU" -ge 2 ] && gpus=0-1
  env ${DENV[@]+"${DENV[@]}"} "$@" TMPDIR="$W/tmp" "$CLI" profile --backend nccl --gpus $gpus "${NLIB[@]}" --sizes 4K:256M \
    --reps 7 --full --force --out "$W/$name.cfg" >"$W/$name.out" 2>"$W/$name.err" &
  p=$!
  BG="$BG $p"
  for i in $(seq 1 40); do
    sleep 0.25
    d=$(descendants $p)
    [ "$(echo $d | wc -w)" -ge 2 ] && break
  done
  sleep 2
  d=$(descendants $p)
  kill -0 $p 2>/dev/null || { wait $p; fail "signal-$name" "the profile ended (exit $?) before $sig"; return; }
  info "profiler $p; worker and ranks: $d"
  kill -s "$sig" $p
  for i in $(seq 1 60); do kill -0 $p 2>/dev/null || break; sleep 0.5; done
  kill -0 $p 2>/dev/null && { fail "signal-$name" "still running 30 s after $sig"; kill -KILL $p; }
  wait $p 2>/dev/null
  rc=$?
  [ $rc -eq "$want" ] && pass "exit-$name" "exit $rc" || fail "exit-$name" "exit $rc, want $want"
  for i in $(seq 1 20); do alive=$(alive_of $d); [ -z "$alive" ] && break; sleep 0.5; done
  [ -z "$alive" ] && pass "orphans-$name" "no worker or rank survives" || fail "orphans-$name" "still running: $alive"
  for q in $alive; do kill -KILL $q 2>/dev/null; done
  if [ "$DOUBLE" != 1 ] && command -v nvidia-smi >/dev/null 2>&1; then
    local apps held=""
    apps=$(timeout 20 nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | tr -d ' ')
    for q in $d; do echo "$apps" | grep -qx "$q" && held="$held $q"; done
    [ -z "$held" ] && pass "gpu-free-$name" "nvidia-smi lists none of them" || fail "gpu-free-$name" "on the GPU:$held"
  fi
}
if [ -n "${DEF[graph]:-}" ]; then
  # NCCL's initialisation held up (the double: PTDOUBLE_INIT_S; on a GPU the
  # first worker start itself): Ctrl-C must not wait for it.
  signal_run ctrlc-start INT 130 PTDOUBLE_INIT_S=60
  signal_run ctrlc INT 130
  if [ "$NGPU" -ge 2 ]; then
    grep -q 'state = "partial"\|state = "complete"' "$W/ctrlc.cfg" 2>/dev/null &&
      pass partial-ctrlc "partial profile written" || fail partial-ctrlc "no profile after Ctrl-C"
  fi
  signal_run sigkill KILL 137
else
  skip signals "the graph profile failed, so these would too"
fi

summary
[ "$FAIL" -eq 0 ]
