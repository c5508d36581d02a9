#!/usr/bin/env bash
# The README's Python examples, as pasted: the tutorial is done in an empty
# directory with the build tree's command and library (its files and
# commands taken from README.md, tests/e2e/readme_blocks.awk), then every
# block marked `<!-- test: python -->` runs there, verbatim, under the
# interpreter the module was built for. A block that needs numpy or pandas
# where they are missing must fail with the message naming the Debian
# package (and the check is a SKIP). TAP output.
# Usage: readme_test.sh SOURCE-DIR SIMPLETRACE-CLI PYTHON LIBSIMPLETRACE-DIR
# (PYTHONPATH finds the module in the build tree.)
set -u
src=$(cd "$1" && pwd) st=$2 python=$3 libdir=$4
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
n=0 fail=0
check() { n=$((n+1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fail=$((fail+1)); fi; }
show() { tail -25 "$@" | sed 's/^/# /'; false; }

blocks=$tmp/blocks work=$tmp/tutorial bin=$tmp/bin
mkdir -p "$blocks" "$work" "$bin"
awk -v dir="$blocks" -f "$src/tests/e2e/readme_blocks.awk" "$src/README.md" >"$tmp/awk.log" 2>&1
rc=$?
check "README.md's tested blocks are well formed" '[ $rc -eq 0 ] || show "$tmp/awk.log"'
python_blocks=$(awk '$2 == "python" {print $1}' "$blocks/index")
check "README.md has Python blocks to run" '[ -n "$python_blocks" ]'

# The tutorial as a user types it, `simpletrace` and `pkg-config` answering
# for the build tree (the only pkg-config call is `--cflags --libs simpletrace`).
ln -s "$(cd "$(dirname "$st")" && pwd)/$(basename "$st")" "$bin/simpletrace"
printf '#!/bin/sh\necho "-I%s/include -L%s -lsimpletrace -Wl,-rpath,%s -pthread"\n' "$src" "$libdir" "$libdir" \
  >"$bin/pkg-config"
chmod +x "$bin/pkg-config"
{
  echo 'set -e'
  echo "cd '$work'"
  while read -r b tag arg; do
    case $tag in
      file) echo "cp '$blocks/$b' '$arg'" ;;
      run) echo ". '$blocks/$b' >/dev/null" ;;
    esac
  done <"$blocks/index"
} >"$tmp/tutorial.sh"
env -u SIMPLETRACE PATH="$bin:$PATH" bash "$tmp/tutorial.sh" >"$tmp/tutorial.log" 2>&1
check "the tutorial writes app.trace" '[ -s "$work/app.trace" ] || show "$tmp/tutorial.log"'

have() { "$python" -c "import $1" 2>/dev/null; }
for b in $python_blocks; do
  first=$(grep -v -e '^import ' -e '^$' -e '^#' "$blocks/$b" | head -1 | cut -c1-60)
  (cd "$work" && "$python" "$blocks/$b") >"$tmp/$b.out" 2>"$tmp/$b.err"
  rc=$?
  missing=
  if grep -q -e numpy -e dataframe "$blocks/$b"; then
    have numpy || missing=numpy
    if [ -z "$missing" ] && grep -q dataframe "$blocks/$b"; then have pandas || missing=pandas; fi
  elif grep -q to_frame "$blocks/$b"; then
    have pandas || missing=pandas
  fi
  if [ -n "$missing" ]; then
    check "README Python block \`$first\` without $missing: one line naming python3-$missing" \
      '[ $rc -ne 0 ] && tail -1 "$tmp/$b.err" | grep -q "python3-$missing" || show "$tmp/$b.err"'
    n=$((n+1)); echo "ok $n - README Python block \`$first\` runs # SKIP $missing is not installed (python3-$missing)"
  else
    check "README Python block \`$first\` runs as pasted" '[ $rc -eq 0 ] && [ ! -s "$tmp/$b.err" ] || show "$tmp/$b.err"'
  fi
done
# What the first block says it prints.
first_block=$(echo "$python_blocks" | head -1)
check "the first block prints every record of the trace and the jobs [0, 1, 2]" \
  '[ "$(grep -c "^job_start \|^cache_lookup " "$tmp/$first_block.out")" -eq 6 ] &&
   [ "$(tail -1 "$tmp/$first_block.out")" = "[0, 1, 2]" ] || show "$tmp/$first_block.out"'

echo "1..$n"
exit $((fail > 0))
