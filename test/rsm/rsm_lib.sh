# Helpers for the rsm test scripts (source after ../lib.sh).
RSM_ARGS="--mca pml ob1 --mca btl self,rsm"
# Segment tags ("/rsm-<tag>-...") a job printed with btl_base_verbose >= 10.
rsm_tags() { grep -o 'control segment /rsm-[0-9a-f]*-ctl' "$1" | sed 's|.*/rsm-\([0-9a-f]*\)-ctl|\1|' | sort -u; }
# Files in /dev/shm still carrying one of those tags.
rsm_leftovers() { local t; for t in $(rsm_tags "$1"); do ls /dev/shm/ 2>/dev/null | grep -- "rsm-$t-"; done; }
