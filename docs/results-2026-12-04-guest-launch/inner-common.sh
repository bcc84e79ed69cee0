# Sourced first by this directory's guest scripts: the guest's environment and its two hosts
# as these measurements had them, before guest_env.sh turned hwloc's plugins off.
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$top/test/guest/guest_env.sh" xbguest 1536
unset HWLOC_PLUGINS_BLACKLIST
. "$top/test/guest/guest_hosts.sh"
W=$GH/test
mkdir -p "$W"
gh_up_tap 2 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
