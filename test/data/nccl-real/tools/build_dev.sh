#!/bin/sh
# build.sh for NCCL's dev branch (2.31): src/tuning/*.cc instead of
# graph/tuning.cc and the enqueue.cc extract; harness_dev.cc calls
# NCCL's ncclTuning* functions directly (they are no longer static).
# usage: build_dev.sh NCCL_GIT_DIR WORK_DIR   (NCCL_REV, default dev)
#   NCCL_REAL_STUBS: the shared harness's stubs.cc (default: beside this script)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
stubs=${NCCL_REAL_STUBS:-$here/stubs.cc}
git_dir=$1
work=$2
cuda=${CUDA_HOME:-/usr/local/cuda}
rev=${NCCL_REV:-dev}
rm -rf "$work/nccl"; mkdir -p "$work/nccl" "$work/obj"
git --git-dir="$git_dir" archive "$rev" src makefiles | tar -x -C "$work/nccl"
mk="$work/nccl/makefiles/version.mk"
maj=$(sed -n 's/^NCCL_MAJOR *:= *//p' "$mk"); min=$(sed -n 's/^NCCL_MINOR *:= *//p' "$mk"); pat=$(sed -n 's/^NCCL_PATCH *:= *//p' "$mk")
ver=$(printf "%d%02d%02d" "$maj" "$min" "$pat")
mkdir -p "$work/gen"
sed -e "s/\${nccl:Major}/$maj/g" -e "s/\${nccl:Minor}/$min/g" -e "s/\${nccl:Patch}/$pat/g" \
    -e "s/\${nccl:Suffix}//g" -e "s/\${nccl:Version}/$ver/g" "$work/nccl/src/nccl.h.in" > "$work/gen/nccl.h"
FL="-std=c++17 -O1 -g -w -fno-pie -DNCCL_OS_LINUX -DCUDA_MAJOR=13 -DCUDA_MINOR=0 -DNCCL_GIN_PROXY_ENABLE=0 -DNVTX_DISABLE"
INC="-I$work/gen -I$work/nccl/src/include -I$work/nccl/src -I$work/nccl/src/graph -I$work/nccl/src/tuning -I$work/nccl/src/include/plugin -I$cuda/include -I$cuda/include/cccl"
srcs="graph/xml graph/topo graph/paths graph/search misc/utils"
for f in "$work"/nccl/src/tuning/*.cc; do srcs="$srcs tuning/$(basename "$f" .cc)"; done
for f in $srcs; do
  o="$work/obj/$(echo "$f" | tr / _).o"
  [ -f "$o" ] || g++ $FL $INC -c "$work/nccl/src/$f.cc" -o "$o"
done
g++ $FL $INC -c "$stubs" -o "$work/obj/stubs.o"
g++ $FL $INC -c "$here/stubs_dev.cc" -o "$work/obj/stubs_dev.o"
g++ $FL $INC -c "$here/harness_dev.cc" -o "$work/obj/harness.o"
g++ -no-pie -o "$work/harness" "$work"/obj/*.o -Wl,--unresolved-symbols=ignore-all -lpthread -ldl
echo "built harness: NCCL $maj.$min.$pat, commit $(git --git-dir="$git_dir" rev-parse --short "$rev")"
