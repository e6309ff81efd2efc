#!/usr/bin/env bash
# Keeps the documentation honest (see BUILD.bazel):
#   docs_test.sh --readme README.md --guide docs/user-guide.md --docs DOC.md... --sources FILE...
# 1. Every HOSHMEM_*, SHMEM_* and SMA_* environment variable the sources read, through getenv,
#    the variable table of lib/core/config.cc, a raw "NAME=" lookup in the environment, or ${NAME}
#    in a shell script, has a row in the variable table of the user guide (the table whose header
#    starts with "| variable |"); every variable named in that table's first column is read.
# 2. Every repository path README.md and the docs name (scripts/..., docs/..., examples/...,
#    perf/..., test/..., lib/..., tools/..., include/..., and every relative link) exists, and
#    every link to a heading (file.md#anchor) finds that heading.
set -uo pipefail

readme="" guide="" docs=() sources=()
list=none
while (($#)); do
  case $1 in
    --readme) readme=$2; shift 2; continue ;;
    --guide) guide=$2; shift 2; continue ;;
    --docs) list=docs ;;
    --sources) list=sources ;;
    *) if [[ $list == docs ]]; then docs+=("$1"); else sources+=("$1"); fi ;;
  esac
  shift
done
[[ -f $readme && -f $guide && ${#sources[@]} -gt 0 ]] ||
  { echo "usage: docs_test.sh --readme F --guide F --docs F... --sources F..." >&2; exit 2; }

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The checkout the runfiles point into: paths named in the docs are looked up there (the docs
# may name any file of the repository, not only this test's data).
root=$(dirname "$(readlink -f "$readme")")
[[ -d $root/docs && -d $root/lib ]] || root=$(cd "$(dirname "$readme")" && pwd)

# ---- 1. environment variables ----

# NAME per line: every variable the sources read.
variables_read() {
  local f
  for f in "${sources[@]}"; do
    case $f in
      *.sh)
        grep -oE '\$\{?(HOSHMEM|SHMEM|SMA)_[A-Z0-9_]+' "$f" | sed -E 's/^\$\{?//' ;;
      *)
        grep -oE 'getenv\("[A-Za-z0-9_]+"\)' "$f" | sed -E 's/^getenv\("([A-Za-z0-9_]+)"\)$/\1/'
        grep -oE '"[A-Z0-9_]+="' "$f" | tr -d '"='
        # lib/core/config.cc's table: {"NAME", "DEPRECATED_NAME" or nullptr, ...
        grep -oE '^[[:space:]]*\{"[A-Z0-9_]+", *("[A-Z0-9_]+"|nullptr)' "$f" |
          grep -oE '"[A-Z0-9_]+"' | tr -d '"' ;;
    esac
  done | grep -E '^(HOSHMEM|SHMEM|SMA)_[A-Z0-9_]+$' | sort -u
}

# NAME per line: the variables in the first column of the guide's variable table.
variables_documented() {
  awk '
    /^\| *variable *\|/ { table = 1; next }
    table && !/^\|/ { table = 0 }
    table && /^\| *-/ { next }
    table {
      split($0, cell, "|")
      rest = cell[2]
      while (match(rest, /`[^`]+`/)) {
        print substr(rest, RSTART + 1, RLENGTH - 2)
        rest = substr(rest, RSTART + RLENGTH)
      }
    }' "$guide" | grep -E '^(HOSHMEM|SHMEM|SMA)_[A-Z0-9_]+$' | sort -u
}

read_vars=$(variables_read)
doc_vars=$(variables_documented)
n_read=$(grep -c . <<<"$read_vars")
# The extraction itself must work, or the comparison below proves nothing.
((n_read >= 20)) || fail "found only $n_read variables in the sources (the extraction is broken?)"
for v in SHMEM_SYMMETRIC_SIZE SMA_SYMMETRIC_SIZE HOSHMEM_RC_TIMEOUT HOSHMEM_PUT_COPY HOSHMEM_CC; do
  grep -qx "$v" <<<"$read_vars" || fail "the sources do not seem to read $v (the extraction is broken?)"
done
[[ -n $doc_vars ]] || fail "no variable table (header '| variable | ...') in $guide"

while read -r v; do
  [[ -z $v ]] && continue
  grep -qx "$v" <<<"$doc_vars" || fail "$v is read by the library or the tools but missing from the table in docs/user-guide.md"
done <<<"$read_vars"
while read -r v; do
  [[ -z $v ]] && continue
  grep -qx "$v" <<<"$read_vars" || fail "$v is in the table of docs/user-guide.md but nothing reads it"
done <<<"$doc_vars"
echo "variables: $n_read read, $(grep -c . <<<"$doc_vars") in the table"

# ---- 2. paths and links ----

# The anchors of a markdown file's headings, one per line (GitHub's rule: lower case, only
# letters, digits, spaces, '-' and '_' kept, spaces to '-').
anchors() {
  awk '/^```/ { fence = !fence; next } !fence && /^#+ / { sub(/^#+ +/, ""); print }' "$1" |
    tr 'A-Z' 'a-z' | sed -E 's/[^a-z0-9 _-]//g; s/ /-/g'
}

# check_file REPO_PATH: REPO_PATH is the file's path in the repository (README.md, docs/x.md).
check_file() {
  local rel=$1 file=$root/$1 dir n=0 p target frag
  dir=$(dirname "$rel")
  [[ -f $file ]] || { fail "$rel: not in the checkout at $root"; return; }
  # Repository paths in the text (code, backticks, prose): a known top directory at the start of
  # a word, not inside another path or a Bazel label (//test/...).
  while read -r p; do
    p=${p%.}; p=${p%,}; p=${p%:}; p=${p%;}
    [[ -z $p ]] && continue
    n=$((n + 1))
    [[ -e $root/$p ]] || fail "$rel names $p, which does not exist"
  done < <(grep -oE '(^|[][ `(|"'"'"'])(scripts|docs|examples|perf|test|lib|tools|include|third_party)/[A-Za-z0-9_./+-]*' "$file" |
    sed -E 's/^[][ `(|"'"'"']//' | sort -u)
  # Links: [text](target), relative to the file, with an optional #anchor.
  while read -r target; do
    [[ -z $target || $target == *://* || $target == mailto:* ]] && continue
    n=$((n + 1))
    frag=""
    if [[ $target == *"#"* ]]; then frag=${target#*#}; target=${target%%#*}; fi
    if [[ -z $target ]]; then
      p=$rel
    else
      p=$(realpath -m --relative-to="$root" "$root/$dir/$target")
    fi
    if [[ ! -e $root/$p ]]; then
      fail "$rel links to $target, which does not exist"
    elif [[ -n $frag ]] && ! anchors "$root/$p" | grep -qx -- "$frag"; then
      fail "$rel links to $p#$frag, but $p has no heading with that anchor"
    fi
  done < <(grep -oE '\]\([^) ]+\)' "$file" | sed -E 's/^\]\((.*)\)$/\1/' | sort -u)
  echo "$rel: $n paths and links checked"
}

check_file README.md
for d in "${docs[@]}"; do
  case $d in docs/*.md) check_file "$d" ;; esac
done

if ((failures)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "PASS: the docs' variable table matches the code, and every path and link they name exists"
