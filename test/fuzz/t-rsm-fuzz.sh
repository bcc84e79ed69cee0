#!/bin/bash
# Fuzz the rsm postbox parser with libFuzzer (clang) for a bounded time and a
# fixed seed; any crash or sanitizer report fails the test.
. "$(dirname "$0")/../lib.sh"
CLANG=${CLANG:-$(command -v clang || command -v clang-14 || true)}
[ -n "$CLANG" ] || { echo "# clang not found"; exit 77; }
secs=${RSM_FUZZ_SECONDS:-30}
out=$TOP_BUILDDIR/test/fuzz
mkdir -p "$out/corpus-rsm"
bin=$out/fuzz_rsm_postbox
if ! "$CLANG" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -I"$TOP_SRCDIR/btl_rsm" "$TOP_SRCDIR/test/fuzz/fuzz_rsm_postbox.c" \
        "$TOP_SRCDIR/btl_rsm/rsm_postbox.c" -o "$bin" 2>"$out/build.log"; then
    diag < "$out/build.log"
    not_ok "fuzz target builds with $CLANG"
    tap_done; exit
fi
ok "fuzz target builds with $CLANG"
# seed the corpus with a one-postbox inline message, a pointer message, and a
# two-postbox inline group followed by a pad (header: flag, nbytes, kind, tag)
printf '\x01\x00\x00\x00\x05\x00\x31\x41%-56s' hello > "$out/corpus-rsm/inline"
printf '\x01\x00\x00\x00\x01\x00\x32\x07\x00\x10\x00\x00\x00\x01\x00\x00\x01\x00\x00\x00%-44s' "" > "$out/corpus-rsm/pointer"
printf '\x01\x00\x00\x00\x64\x00\x31\x41%-56s%-64s\x03\x00\x00\x00\x00\x00\x33\x00%-56s' a b c > "$out/corpus-rsm/group-pad"
log=$out/fuzz.log
timeout -k 10 $((secs + 60)) "$bin" -seed=12345 -max_total_time="$secs" -max_len=4096 \
    -artifact_prefix="$out/" "$out/corpus-rsm" >"$log" 2>&1
rc=$?
tail -3 "$log" | diag
runs=$(grep -o 'Done [0-9]* runs' "$log" | awk '{print $2}')
check "parser survives ${runs:-?} fuzzed inputs in ${secs}s (no crash, no sanitizer report)" \
    [ "$rc" -eq 0 ]
tap_done
