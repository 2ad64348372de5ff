#!/bin/sh
# Runs the dev harness on every topology/environment of the 2.30.7 fixtures.
# usage: run_dev.sh HARNESS FIXTURE_DIR OUT_DIR
set -eu
h=$1; dir=$2; out=$3
mkdir -p "$out"
cd "$dir"
for f in *.txt; do
  case $f in *.nccl-*|PROVENANCE.txt) continue;; esac
  b=${f%.txt}; topo=${b%%.*}; envs=${b#"$topo"}; vars=""
  case "$envs." in *.noP2P.*) vars="$vars HARNESS_NO_P2P=1";; esac
  case "$envs." in *.P2P_LEVEL_SYS.*) vars="$vars NCCL_P2P_LEVEL=SYS";; esac
  case "$envs." in *.PROTO_LL_LL128_Simple.*) vars="$vars NCCL_PROTO=LL,LL128,Simple";; esac
  env -u NCCL_P2P_LEVEL -u NCCL_PROTO -u NCCL_ALGO $vars "$h" "$topo.xml" > "$out/$b.nccl-2.31.0-dev.txt"
done
