#!/bin/sh
# make mutate: do the suites fail when the decision code is wrong?
#
# Each line of mk/mutants.txt is one mutant, a one-line change a real edit
# could make:  ID @@ FILE @@ SUITES @@ FROM @@ TO
# FROM must occur exactly once in FILE (else the mutant is an ERROR: the
# source moved on and the list must follow). The mutants are applied one at
# a time to a scratch copy of the tree (never to the files here), built
# incrementally, and the listed suites run until one fails: the mutant is
# caught. One that builds and passes every listed suite SURVIVED. The
# suites first run once unmutated; a failure there stops everything.
#
# Prints one line per mutant and the score; exits 0 only when every mutant
# was caught. Slow (a build and a few suites per mutant): not part of CI.
set -u
list=${1:-mk/mutants.txt}
src=$(pwd)
case $list in /*) ;; *) list=$src/$list ;; esac
[ -f "$list" ] || { echo "mutate: no $list"; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/pt-mutate-XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
log=$work/.log

# The tree as git sees it (tracked and untracked, not ignored), and build/
# for an incremental first build.
git ls-files -co --exclude-standard -z | xargs -0 cp -a --parents -t "$work" || exit 2
[ -d build ] && cp -a build "$work/"
cd "$work" || exit 2

field() { # field N LINE: the Nth " @@ "-separated field, trimmed
  printf '%s\n' "$2" | awk -v n="$1" '{ split($0, f, / @@ /); s = f[n];
    sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); print s }'
}

# Replaces the one occurrence of $FROM in $1; prints how many there were
# (the file is changed only when there was exactly one).
apply() {
  n=$(FROM="$from" awk '{ line = $0; while ((i = index(line, ENVIRON["FROM"])) > 0) {
        n++; line = substr(line, i + length(ENVIRON["FROM"])) } } END { print n + 0 }' "$1")
  if [ "$n" = 1 ]; then
    FROM="$from" TO="$to" awk '{ i = index($0, ENVIRON["FROM"]);
        if (i) $0 = substr($0, 1, i - 1) ENVIRON["TO"] substr($0, i + length(ENVIRON["FROM"]));
        print }' "$1" > "$1.mut" && mv "$1.mut" "$1"
  fi
  echo "$n"
}

run_suite() { # run_suite NAME: 0 when it passes
  PCIE_TUNER_SO="$work/build/libnccl-tuner-pcie.so" PCIE_TUNE="$work/build/pcie-tune" \
    PT_SRCDIR="$work" timeout 900 "build/test/$1" >> "$log" 2>&1
}

build() { # build SUITES...
  targets="all build/test/double/libnccl-double-cudart-nccl.so build/test/ncclver_double/libnccl-double-version.so"
  for s in "$@"; do targets="$targets build/test/$s"; done
  # shellcheck disable=SC2086
  make -j2 $targets >> "$log" 2>&1
}

all_suites=$(grep -v '^[[:space:]]*\(#\|$\)' "$list" | while IFS= read -r l; do field 3 "$l"; done |
  tr ' ' '\n' | sort -u | tr '\n' ' ')
echo "mutate: building and running the suites unmutated ($all_suites)"
# shellcheck disable=SC2086
build $all_suites || { echo "mutate: the unmutated tree does not build (see $log)"; tail -20 "$log"; exit 2; }
for s in $all_suites; do
  run_suite "$s" || { echo "mutate: $s fails unmutated; fix that first"; tail -20 "$log"; exit 2; }
done

total=0 caught=0 survived=0 errors=0
while IFS= read -r line; do
  case $line in '' | '#'*) continue ;; esac
  id=$(field 1 "$line") file=$(field 2 "$line")
  suites=$(field 3 "$line") from=$(field 4 "$line") to=$(field 5 "$line")
  total=$((total + 1))
  if [ ! -f "$file" ]; then
    echo "ERROR    $id: $file does not exist"
    errors=$((errors + 1))
    continue
  fi
  cp -p "$file" "$work/.orig"
  n=$(apply "$file")
  if [ "$n" != 1 ]; then
    echo "ERROR    $id: '$from' occurs $n times in $file, not once: update mk/mutants.txt"
    errors=$((errors + 1))
    continue
  fi
  # shellcheck disable=SC2086
  if ! build $suites; then
    echo "ERROR    $id: the mutant does not build (a mutant must compile)"
    errors=$((errors + 1))
  else
    by=
    for s in $suites; do
      run_suite "$s" || { by=$s; break; }
    done
    if [ -n "$by" ]; then
      echo "caught   $id (by $by)"
      caught=$((caught + 1))
    else
      echo "SURVIVED $id: $file: '$from' -> '$to' passes $suites"
      survived=$((survived + 1))
    fi
  fi
  # The original back, newer than its objects, so the next build restores it.
  cp "$work/.orig" "$file" && touch "$file"
done < "$list"

echo "mutate: caught $caught of $total mutants ($survived survived, $errors errors)"
[ "$caught" = "$total" ]
