#!/bin/sh
# Run by the guest bench (bench/rsm_verbs_guest_bench.sh, transport ucx-2rails) in front of a
# benchmark: the host's agent set UCX_NET_DEVICES to this host's first rail (rxeI:1); add the
# same host's second rail (rxsI:1) and run the benchmark.
case "$UCX_NET_DEVICES" in
rxe[0-9]*:1) UCX_NET_DEVICES="$UCX_NET_DEVICES,$(echo "$UCX_NET_DEVICES" | sed 's/^rxe/rxs/')" ;;
*) echo "ucx_both_rails: UCX_NET_DEVICES is '$UCX_NET_DEVICES', not one rxeI:1 device" >&2; exit 2 ;;
esac
export UCX_NET_DEVICES
exec "$@"
