#!/bin/bash
# Loop devices in a node container (kubit-disk volumes, see docker-compose.yml).
# The container is not privileged: the device cgroup lets it use /dev/loop-control
# and the loop devices (block major 7), but its /dev is Docker's own tmpfs with
# none of their nodes, and losetup opens /dev/loopN by name after
# /dev/loop-control handed it the number N. Loop devices are the host's, shared
# with every container and the host itself.
#
#   loop-devices.sh nodes       make /dev/loop-control and a /dev/loopN for every N
#                               the next `losetup --find` can be given
#   loop-devices.sh detach DIR  detach every loop device whose backing file lies
#                               under DIR (a busy one goes when its last user closes it)
set -euo pipefail

nodes() {
  [ -e /dev/loop-control ] || mknod -m 0660 /dev/loop-control c 10 237 2>/dev/null || [ -e /dev/loop-control ]
  # LOOP_CTL_GET_FREE answers the lowest free number, or makes the device after the
  # last one: never above the count of loop devices there are. A few spare nodes
  # cover devices others attach meanwhile.
  local count=0 shift=0 max_part i
  for d in /sys/block/loop*; do [ -e "$d" ] && count=$((count + 1)); done
  # With the module's max_part, each loop device's minors leave room for its partitions.
  max_part=$(cat /sys/module/loop/parameters/max_part 2>/dev/null || echo 0)
  while [ $(((1 << shift) - 1)) -lt "$max_part" ]; do shift=$((shift + 1)); done
  for ((i = 0; i <= count + 8; i++)); do
    [ -e "/dev/loop$i" ] || mknod -m 0660 "/dev/loop$i" b 7 $((i << shift)) 2>/dev/null || true
  done
}

detach() {
  # This node's disks are told by their files' device and inode, not by path: every
  # node container has the same /var/lib/kubelet/storage, and the kernel shows each
  # backing file by the path its container saw.
  local dir=${1%/} f name majmin ino
  local -A mine=()
  while IFS= read -r -d '' f; do
    mine["$(stat -c '%Hd:%Ld %i' "$f")"]=1
  done < <(find "$dir" -xdev -type f -print0 2>/dev/null)
  [ "${#mine[@]}" -gt 0 ] || return 0
  while read -r name majmin ino; do
    [ -n "${mine["$majmin $ino"]:-}" ] || continue
    [ -e "$name" ] || nodes
    # A busy device goes when its last user (a mount) closes it.
    /sbin/losetup -d "$name" 2>/dev/null || true
  done < <(/sbin/losetup -l -n -O NAME,BACK-MAJ:MIN,BACK-INO 2>/dev/null)
}

case "${1:-}" in
  nodes) nodes ;;
  detach) detach "${2:?loop-devices.sh detach DIR}" ;;
  *) echo "usage: loop-devices.sh nodes | detach DIR" >&2; exit 2 ;;
esac
