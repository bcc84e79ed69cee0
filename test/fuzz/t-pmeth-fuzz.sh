#!/bin/bash
# Fuzz pmeth's frame parser with libFuzzer (clang) for a bounded time and a
# fixed seed; a crash, a sanitizer report or a broken promise on an accepted
# frame (fuzz_pmeth_wire.c) fails the test.  No clang or no libFuzzer: skipped.
. "$(dirname "$0")/../lib.sh"
CLANG=${CLANG:-$(command -v clang || command -v clang-14 || true)}
[ -n "$CLANG" ] || { skip "pmeth parser fuzzing" "clang not found"; tap_done; exit; }
secs=${PMETH_FUZZ_SECONDS:-20}
out=$TOP_BUILDDIR/test/fuzz
corpus=$out/corpus-pmeth
mkdir -p "$corpus"
bin=$out/fuzz_pmeth_wire
if ! "$CLANG" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -I"$TOP_SRCDIR/btl_pmeth" "$TOP_SRCDIR/test/fuzz/fuzz_pmeth_wire.c" \
        "$TOP_SRCDIR/btl_pmeth/pmeth_wire.c" -o "$bin" 2>"$out/build-pmeth.log"; then
    if grep -q 'libclang_rt.fuzzer\|fuzzer.*not found\|unsupported option' "$out/build-pmeth.log"; then
        diag < "$out/build-pmeth.log"
        skip "pmeth parser fuzzing" "libFuzzer not available with $CLANG"
        tap_done; exit
    fi
    diag < "$out/build-pmeth.log"
    not_ok "pmeth fuzz target builds with $CLANG"
    tap_done; exit
fi
ok "pmeth fuzz target builds with $CLANG"

# Seeds: control bytes (max_frame index | plant-filter-fields bit, nlinks), then
# a frame.  Header layout: pmeth_wire.h.  hdr TYPE LINK TAG LEN prints the 56
# header bytes for this job (key 0x5eed1e55, destination 41, source 17).
hdr() {
    printf '\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x88\xb5'   # MACs, EtherType
    printf '\x55\x1e\xed\x5e\x29\x00\x00\x00\x11\x00\x00\x00'           # key, dst 41, src 17
    printf "\\x01\\x$1\\x00\\x$2\\x$3\\x00\\x$4\\x00\\x00\\x00"         # ver type flags link tag res len res
    if [ "$1" = 01 ]; then   # DATA: seq 7, ack 3, sack 5
        printf '\x07\x00\x00\x00\x03\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00'
    else
        printf '%020d' 0 | tr 0 '\000'
    fi
}
{ printf '\x00\x04'; hdr 01 02 41 '08'; printf 'payload!'; } > "$corpus/data"
{ printf '\x00\x04'; hdr 02 01 00 '00'; printf '%-4s' ''; } > "$corpus/ack-padded"
{ printf '\x00\x08'; hdr 03 03 00 '18'
  printf '\x08\x07\x06\x05\x04\x03\x02\x01\x03\x05\x00\x00\xdc\x05\x00\x00\x50\x00\x00\x00\x00\x00\x00\x00'
} > "$corpus/probe"
{ printf '\x00\x04'; hdr 06 00 00 '04'; printf 'peek'; } > "$corpus/reserved-type"
log=$out/fuzz-pmeth.log
timeout -k 10 $((secs + 60)) "$bin" -seed=20240 -max_total_time="$secs" -max_len=9100 \
    -artifact_prefix="$out/pmeth-" "$corpus" >"$log" 2>&1
rc=$?
tail -3 "$log" | diag
runs=$(grep -o 'Done [0-9]* runs' "$log" | awk '{print $2}')
check "pmeth parser survives ${runs:-?} fuzzed frames in ${secs}s (no crash, no sanitizer report, every accepted frame keeps the parser's promises)" \
    [ "$rc" -eq 0 ]
tap_done
