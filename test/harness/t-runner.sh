#!/bin/bash
# The runner itself: it must count TAP lines, exit statuses, skips and time-outs
# as its contract says, or every other result it prints means nothing.
. "$(dirname "$0")/../lib.sh"
fx=$(mktemp -d /tmp/xb-runner.XXXXXX)
trap 'rm -rf "$fx"' EXIT
mk() { printf '#!/bin/bash\n%s\n' "$2" > "$fx/$1"; chmod +x "$fx/$1"; }
summary() { "$TOP_SRCDIR/test/run" --no-build --timeout 3 --units "$fx/none" --scripts "$fx" "$@" 2>&1 | tail -1; }

mk t-tap-mixed 'echo "ok 1 - a"; echo "not ok 2 - b"; echo "ok 3 - c # SKIP no device"; exit 1'
check "TAP lines count one each (1 passed, 1 failed, 1 skipped)" \
    [ "$(summary -k tap-mixed)" = "1 passed, 1 failed, 1 skipped" ]
mk t-plain-pass 'exit 0'
mk t-plain-fail 'exit 3'
mk t-plain-skip 'exit 77'
check "a test without TAP counts once: a skip by exit 77, else a failure (exit 0 too: it checked nothing)" \
    [ "$(summary -k plain)" = "0 passed, 2 failed, 1 skipped" ]
mk t-lying 'echo "ok 1 - all fine"; exit 2'
check "all-ok TAP lines with a failing exit status count one failure more" \
    [ "$(summary -k lying)" = "1 passed, 1 failed, 0 skipped" ]
mk t-hang 'echo "ok 1 - started"; sleep 60'
start=$SECONDS
check "a test that overruns is killed and counted failed" \
    [ "$(summary -k hang)" = "1 passed, 1 failed, 0 skipped" ]
check "the overrun was stopped at the time-out, not waited for" [ $((SECONDS - start)) -lt 20 ]
"$TOP_SRCDIR/test/run" --no-build --units "$fx/none" --scripts "$fx" -k plain-fail >/dev/null 2>&1
check "the runner exits non-zero when anything failed" [ $? -ne 0 ]
mk t-tap-pass 'echo "ok 1 - fine"'
"$TOP_SRCDIR/test/run" --no-build --units "$fx/none" --scripts "$fx" -k tap-pass >/dev/null 2>&1
check "the runner exits zero when nothing failed" [ $? -eq 0 ]
tap_done
