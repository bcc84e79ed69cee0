# Sourced first by the guest scripts of later measurements (outer.sh runs them): the guest's
# environment as the tests have it, its two hosts up (h0, h1; a TAP line), $W for output,
# and MPI allowed as root.
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$top/test/guest/guest_env.sh" xbguest 1536
. "$top/test/guest/guest_hosts.sh"
W=$GH/test
mkdir -p "$W"
gh_up_tap 2 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
