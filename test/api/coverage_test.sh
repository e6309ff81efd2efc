#!/bin/bash
# API coverage check. Compares the OpenSHMEM 1.6 inventory with
#   (a) the names shmem.h declares (preprocessed with the C compiler) and defines as macros,
#   (b) the dynamic symbols libhoshmem.so exports,
# for every C routine (current and deprecated) and its pshmem_ twin (profiling interface: the twin
# of NAME is pNAME, so shmem_X -> pshmem_X, start_pes -> pstart_pes; each is its own entry),
# the C11 generic names
# (macros, compiled as C11), the constants (macros), the handles (declared and exported) and the
# types. Fails listing every missing name, except those in known_missing.txt; fails as well when a
# name in known_missing.txt is present (declared and exported), so that list only ever shrinks.
#
# usage: coverage_test.sh API_TXT KNOWN_MISSING INCLUDE_DIR LIBHOSHMEM_SO
set -u
api=$1 known=$2 incdir=$3 lib=$4
cc=${CC:-cc}
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/coverage.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --- the inventory, by kind -----------------------------------------------------------------
# "## [Sxx]" sections hold C routines; [G] generics; [K] constants; [H] handles; [Y] types.
awk -v out="$work" '
  /^## \[/ { sec = $2; gsub(/[\[\]]/, "", sec); next }
  /^#/ || NF == 0 { next }
  { name = $1 }
  sec ~ /^S/ { print name > (out "/routines"); next }
  sec == "G" { print name > (out "/generics"); next }
  sec == "K" { print name > (out "/constants"); next }
  sec == "H" { print name > (out "/handles"); next }
  sec == "Y" { print name > (out "/types"); next }
' "$api"
for f in routines generics constants handles types; do
  [ -s "$work/$f" ] || { echo "FAIL: no $f parsed from $api"; exit 1; }
  sort -u -o "$work/$f" "$work/$f"
done
echo "inventory: $(wc -l <"$work/routines") routines, $(wc -l <"$work/generics") generics," \
  "$(wc -l <"$work/constants") constants, $(wc -l <"$work/handles") handles, $(wc -l <"$work/types") types"

# --- what the header declares and defines -----------------------------------------------------
printf '#include <shmem.h>\n' >"$work/inc.c"
if ! "$cc" -std=c11 -E -P -I"$incdir" "$work/inc.c" -o "$work/pp.c" 2>"$work/cc.err"; then
  echo "FAIL: shmem.h does not preprocess as C11:"; cat "$work/cc.err"; exit 1
fi
"$cc" -std=c11 -E -dM -I"$incdir" "$work/inc.c" >"$work/macros" || exit 1
# Identifiers in declarator position (followed by "("), and every identifier (for handles/types).
grep -oE '[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\(' "$work/pp.c" | tr -d ' \t(' | sort -u >"$work/declared"
grep -oE '[A-Za-z_][A-Za-z0-9_]*' "$work/pp.c" | sort -u >"$work/identifiers"
awk '$1 == "#define" { n = $2; sub(/\(.*/, "", n); print n }' "$work/macros" | sort -u >"$work/defined"
# The header must also compile (declarations consistent with each other) as C11 and C++.
if ! "$cc" -std=c11 -fsyntax-only -Wall -Werror -I"$incdir" "$work/inc.c" 2>"$work/cc.err"; then
  echo "FAIL: shmem.h does not compile cleanly as C11:"; cat "$work/cc.err"; exit 1
fi

# --- what the library exports -------------------------------------------------------------------
nm -D --defined-only "$lib" | awk '{ s = $NF; sub(/@.*/, "", s); print s }' | sort -u >"$work/exported"
[ -s "$work/exported" ] || { echo "FAIL: no dynamic symbols in $lib"; exit 1; }

# --- expected entries: "kind name" lines; each must be present ------------------------------
{
  # a routine and its profiling twin are separate entries
  while read -r n; do
    echo "routine $n"
    echo "routine p$n"
  done <"$work/routines"
  sed 's/^/generic /' "$work/generics"
  sed 's/^/constant /' "$work/constants"
  sed 's/^/handle /' "$work/handles"
  sed 's/^/type /' "$work/types"
} >"$work/expected"

# present KIND NAME -> prints what is missing for it (empty when complete)
declare -A DECL EXP DEF IDS
while read -r n; do DECL[$n]=1; done <"$work/declared"
while read -r n; do EXP[$n]=1; done <"$work/exported"
while read -r n; do DEF[$n]=1; done <"$work/defined"
while read -r n; do IDS[$n]=1; done <"$work/identifiers"
# lacks KIND NAME: sets PROBLEMS (one line per absent part; empty when the name is present)
lacks() {
  local kind=$1 n=$2 out=()
  case $kind in
    routine)
      # A deprecated C routine may share its name with a C11 generic macro; the prototype is
      # still in the preprocessed text because the macro is defined after it.
      if [ -n "${DECL[$n]:-}" ]; then :; else out+=("$n: not declared in shmem.h"); fi
      if [ -n "${EXP[$n]:-}" ]; then :; else out+=("$n: not exported by libhoshmem.so"); fi ;;
    generic)
      if [ -n "${DEF[$n]:-}" ]; then :; else out+=("$n: no C11 generic macro"); fi ;;
    constant)
      if [ -n "${DEF[$n]:-}" ]; then :; else out+=("$n: constant not defined"); fi ;;
    handle)
      if [ -n "${IDS[$n]:-}" ]; then :; else out+=("$n: handle not declared"); fi
      if [ -n "${EXP[$n]:-}" ]; then :; else out+=("$n: handle not exported"); fi ;;
    type)
      if [ -n "${IDS[$n]:-}" ]; then :; else out+=("$n: type not declared"); fi ;;
  esac
  PROBLEMS=""
  ((${#out[@]})) && PROBLEMS=$(printf '%s\n' "${out[@]}")
  return 0
}

# known_missing.txt: "kind name" per line, '#' comments
declare -A KNOWN EXPECTED
while read -r line; do EXPECTED[$line]=1; done <"$work/expected"
known_count=0
while read -r kind n _; do
  case $kind in ''|'#'*) continue ;; esac
  case $kind in routine|generic|constant|handle|type) ;; *)
    echo "FAIL: $known: bad line '$kind $n' (kind must be routine|generic|constant|handle|type)"; exit 1 ;;
  esac
  [ -n "${EXPECTED["$kind $n"]:-}" ] || { echo "FAIL: $known lists '$kind $n', which is not in the 1.6 inventory"; exit 1; }
  KNOWN["$kind $n"]=1; known_count=$((known_count + 1))
done <"$known"

missing=0 stale=0 checked=0
while read -r kind n; do
  checked=$((checked + 1))
  lacks "$kind" "$n"
  problems=$PROBLEMS
  if [ -n "${KNOWN["$kind $n"]:-}" ]; then
    if [ -z "$problems" ]; then
      stale=$((stale + 1))
      echo "NOW PRESENT (remove it from known_missing.txt): $kind $n"
    fi
  elif [ -n "$problems" ]; then
    missing=$((missing + 1))
    sed 's/^/MISSING: /' <<<"$problems"
  fi
done <"$work/expected"

echo "checked $checked names ($known_count listed as known missing): $missing missing, $stale listed but present"
[ "$missing" = 0 ] && [ "$stale" = 0 ]
