#!/bin/bash
# Fuzz pmeth's frame parser, and the pmeth helper's request/reply parsers (what a
# root daemon takes from any local user), with libFuzzer (clang) for a bounded
# time and a fixed seed each; a crash, a sanitizer report or a broken promise on
# an accepted input (fuzz_pmeth_wire.c, fuzz_pmeth_helper.c) fails the test.  No
# clang or no libFuzzer: skipped.
. "$(dirname "$0")/../lib.sh"
CLANG=${CLANG:-$(command -v clang || command -v clang-14 || true)}
[ -n "$CLANG" ] || { skip "pmeth parser fuzzing" "clang not found"; tap_done; exit; }
secs=${PMETH_FUZZ_SECONDS:-20}
out=$TOP_BUILDDIR/test/fuzz
mkdir -p "$out"

# build NAME SOURCES...: test/fuzz/NAME from SOURCES (btl_pmeth/ relative); 0, 1 no
# libFuzzer (skipped), 2 failed
build() {
    local name=$1; shift
    local srcs=() s
    for s in "$@"; do srcs+=("$TOP_SRCDIR/btl_pmeth/$s"); done
    if "$CLANG" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
            -I"$TOP_SRCDIR/btl_pmeth" "$TOP_SRCDIR/test/fuzz/$name.c" "${srcs[@]}" \
            -o "$out/$name" 2>"$out/build-$name.log"; then
        ok "$name builds with $CLANG"
        return 0
    fi
    diag < "$out/build-$name.log"
    if grep -q 'libclang_rt.fuzzer\|fuzzer.*not found\|unsupported option' "$out/build-$name.log"; then
        skip "$name" "libFuzzer not available with $CLANG"
        return 1
    fi
    not_ok "$name builds with $CLANG"
    return 2
}
# run NAME SECONDS MAXLEN WHAT: fuzz from test/fuzz/corpus-NAME, one check
run() {
    local name=$1 secs=$2 maxlen=$3 what=$4 log=$out/$1.log rc runs
    timeout -k 10 $((secs + 60)) "$out/$name" -seed=20240 -max_total_time="$secs" \
        -max_len="$maxlen" -artifact_prefix="$out/$name-" "$out/corpus-$name" >"$log" 2>&1
    rc=$?
    tail -3 "$log" | diag
    runs=$(grep -o 'Done [0-9]* runs' "$log" | awk '{print $2}')
    check "$what: ${runs:-?} fuzzed inputs in ${secs}s, no crash, no sanitizer report, every accepted one keeps the parser's promises" \
        [ "$rc" -eq 0 ]
}

build fuzz_pmeth_wire pmeth_wire.c || { tap_done; exit; }
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
corpus=$out/corpus-fuzz_pmeth_wire
mkdir -p "$corpus"
{ printf '\x00\x04'; hdr 01 02 41 '08'; printf 'payload!'; } > "$corpus/data"
{ printf '\x00\x04'; hdr 02 01 00 '00'; printf '%-4s' ''; } > "$corpus/ack-padded"
{ printf '\x00\x08'; hdr 03 03 00 '18'
  printf '\x08\x07\x06\x05\x04\x03\x02\x01\x03\x05\x00\x00\xdc\x05\x00\x00\x50\x00\x00\x00\x00\x00\x00\x00'
} > "$corpus/probe"
{ printf '\x00\x04'; hdr 06 00 00 '04'; printf 'peek'; } > "$corpus/reserved-type"
run fuzz_pmeth_wire "$secs" 9100 "pmeth parser"

build fuzz_pmeth_helper pmeth_helper_proto.c pmeth_wire.c || { tap_done; exit; }
# Seeds: a selector byte (even: a request, odd: a reply), then the message
# (pmeth_helper_proto.h): an AF_PACKET request, an AF_XDP one (receive 1024, send
# 512, 2 KiB chunks), a receive-only AF_XDP one, a grant, a refusal.
req() {     # OP FLAGS RING-BYTES: a request for eth1, EtherType 0x88b5, key and id
    printf "PMHQ\\x01\\x00\\x$1\\x00eth1"; printf '%012d' 0 | tr 0 '\000'
    printf "\\xb5\\x88\\x$2\\x00\\xef\\xbe\\xad\\xde\\x04\\x03\\x02\\x01$3"
}
corpus=$out/corpus-fuzz_pmeth_helper
mkdir -p "$corpus"
{ printf '\x00'; req 01 00 '\x00\x00\x00\x00'; } > "$corpus/packet"
{ printf '\x00'; req 02 02 '\x00\x04\x00\x02'; } > "$corpus/xdp"
{ printf '\x00'; req 02 01 '\x00\x08\x00\x00'; } > "$corpus/xdp-receive-only"
{ printf '\x01PMHR\x01\x00\x00\x00\x05\x00\x07\x00granted'; } > "$corpus/grant"
{ printf '\x01PMHR\x01\x00\x02\x00\x00\x00\x0c\x00not allowed!'; } > "$corpus/refusal"
run fuzz_pmeth_helper $((secs / 2)) 400 "pmeth helper's request and reply parsers"
tap_done
