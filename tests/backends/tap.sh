# TAP helpers for the backend tests (sourced). check DESCRIPTION COMMAND...
# runs the command; skip DESCRIPTION REASON prints an `ok ... # SKIP` line;
# finish prints the plan and exits 1 if anything failed.
tap_n=0 tap_fail=0
check() {
  local what=$1; shift
  tap_n=$((tap_n + 1))
  if "$@"; then echo "ok $tap_n - $what"
  else echo "not ok $tap_n - $what"; tap_fail=$((tap_fail + 1)); fi
}
skip() {
  tap_n=$((tap_n + 1))
  echo "ok $tap_n - $1 # SKIP $2"
}
diag() { sed 's/^/# /' <<<"$*"; }
finish() {
  echo "1..$tap_n"
  [ "$tap_fail" -eq 0 ]
  exit $?
}
# Fails the whole test at once when a required tool or program is missing:
# CI installs them (scripts/deps.sh check), so their absence is a failure.
require_tool() { # tool package
  command -v "$1" >/dev/null 2>&1 && return 0
  check "$1 is installed (Debian package $2; scripts/deps.sh check installs it)" false
  finish
}
require_program() { # path
  [ -x "$1" ] && return 0
  check "traced program built: $1" false
  finish
}
# Succeeds when the file has exactly n lines matching the extended regex.
count_is() { # n regex file
  [ "$(grep -cE -- "$2" "$3")" -eq "$1" ]
}
