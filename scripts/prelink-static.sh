#!/bin/sh
# Makes an installed static library out of an archive of a library's objects:
# one relocatable object (ld -r) whose hidden symbols are made local
# (objcopy --localize-hidden). A program can then link several of our static
# libraries at once (their shared helpers never clash), and every part of a
# library comes in with any of it (the monitor registers its configuration
# keys from a constructor nothing refers to). The SYMBOLs every library
# defines (api.h's functions) are made weak, so that the libraries' copies
# do not clash when a program links several of them; they are the same code.
# Usage: prelink-static.sh LD OBJCOPY AR OUTPUT.a INPUT.a [SYMBOL...]
set -eu
ld=$1 objcopy=$2 ar=$3 out=$4 in=$5
shift 5
tmp=$out.prelink.o
"$ld" -r --whole-archive "$in" -o "$tmp"
set -- --localize-hidden $(for s in "$@"; do printf ' --weaken-symbol=%s' "$s"; done)
"$objcopy" "$@" "$tmp"
rm -f "$out"
"$ar" rcs "$out" "$tmp"
rm -f "$tmp"
