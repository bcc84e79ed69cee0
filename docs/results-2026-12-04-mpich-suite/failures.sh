#!/bin/bash
# OUT=/tmp/mpich ./failures.sh TAG_A TAG_B DIR...: the tests that fail under A, B or both
OUT=${OUT:-/tmp/mpich}
a=$1 b=$2; shift 2
fails() { grep '^not ok' "$OUT/$1-$2.tap" | sed 's/^not ok [0-9]* - //; s/ # time.*//' | sort -u; }
for d in "$@"; do
    echo "== $d: failing under $a only"; comm -23 <(fails "$d" "$a") <(fails "$d" "$b")
    echo "== $d: failing under $b only"; comm -13 <(fails "$d" "$a") <(fails "$d" "$b")
    echo "== $d: failing under both ($(comm -12 <(fails "$d" "$a") <(fails "$d" "$b") | wc -l))"
    comm -12 <(fails "$d" "$a") <(fails "$d" "$b") | tr '\n' ' '; echo
done
