#!/bin/bash
# OSU one-sided between two virtual hosts: pmeth with osc rdma (its own put, get and atomics;
# Debian's osc selection leaves out pt2pt), pmeth with osc pt2pt, tcp with osc pt2pt, interleaved
D=$(cd "$(dirname "$0")" && pwd)
cd "$D/../.."   # the checkout
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
V=contrib/vcluster/vcluster
O=${OSU:-/tmp/suites/osu}/c/mpi/one-sided   # OSU 7.4, built outside the tree
OUT=${OUT:-/tmp/osc-results}; mkdir -p "$OUT"
$V create pair --name oscb --links 1 --mtu 9000 --rate 0 --force >/dev/null 2>&1
declare -A CFG=([pmeth-rdma]="--mca btl self,pmeth" [pmeth-pt2pt]="--mca btl self,pmeth --mca osc pt2pt" [tcp-pt2pt]="--mca btl self,tcp --mca osc pt2pt")
for rep in 1 2 3 4 5; do
  for b in osu_put_latency osu_get_latency osu_fop_latency osu_acc_latency osu_put_bw osu_get_bw; do
    for cfg in pmeth-rdma pmeth-pt2pt tcp-pt2pt; do
      case $b in *_bw) args="-m 1:1048576";; osu_fop_latency) args="";; *) args="-m 1:65536";; esac
      out=$OUT/$b.$cfg.$rep
      timeout 200 $V mpirun --name oscb --ppn 1 --timeout 180 ${CFG[$cfg]} -- "$D"/pin.sh $O/$b $args > $out 2>&1
      echo "$rep $b $cfg rc=$?"
    done
  done
done
$V destroy --name oscb >/dev/null 2>&1
