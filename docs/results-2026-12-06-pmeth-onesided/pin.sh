#!/bin/bash
# each rank on a CPU of its own: n0 -> CPU 0, n1 -> CPU 1 (the bench's "peer" placement)
case "$(hostname)" in n0) c=0;; *) c=1;; esac
exec taskset -c $c "$@"
