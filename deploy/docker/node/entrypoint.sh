#!/bin/bash
# A Kubit node in a kind-like container (see docker-compose.yml): its own
# containerd (configured from deploy/containerd's templates, with a docker.io
# mirror pointing at the compose registry), kubit-kubelet, kubit-proxy and
# kubit-net (routes or VXLAN to the other nodes' pods, NetworkPolicy; the
# container's own network namespace is the node's) and, with KUBIT_DNS=1,
# kubit-dns at NODE_IP:53. This script stays PID 1: kubit-proxy, kubit-net and
# kubit-dns are restarted when they exit (a restart takes the rules over);
# the container ends when the kubelet or containerd does (compose restarts
# it); SIGTERM detaches the node's loop devices, stops kubit-dns (it
# deregisters), then the rest.
#
# Environment (set by docker-compose.yml):
#   NODE_NAME     the node's name (its certificates are kubelet-NAME*)
#   NODE_IP       this container's address on the compose network (static, in the certificates)
#   REGISTRY      host:port of the registry the docker.io mirror points at
#   CLUSTER_CIDR  the pod network (kubit-proxy's --cluster-cidr)
#   KUBIT_DNS     1: run kubit-dns here
#   OVERLAY_MODE  kubit-net's --overlay-mode: host-gw (default: one compose network), vxlan or auto
# PID files of the supervised daemons: /run/kubit/<name>.pid (the current process).
set -euo pipefail
: "${NODE_NAME:?}" "${NODE_IP:?}" "${REGISTRY:?}" "${CLUSTER_CIDR:?}"
state=/state
pki=$state/pki
kubit=/opt/kubit
templates=$kubit/deploy/containerd

log() { printf '%s kubit-node %s: %s\n' "$(date -u +%FT%TZ)" "$NODE_NAME" "$*" >&2; }

# Without `privileged` (see docker-compose.yml) Docker mounts /proc/sys and
# /sys read-only; the CNI plugins and runc write there, as on a real host.
mount -o remount,rw /proc/sys 2>/dev/null || true
mount -o remount,rw /sys 2>/dev/null || true
# Pods route through this container: forward between the pod bridge and eth0.
sysctl -qw net.ipv4.ip_forward=1 || [ "$(cat /proc/sys/net/ipv4/ip_forward)" = 1 ]
# Volumes and mounts inside pods need shared propagation, as on a real host.
mount --make-rshared / 2>/dev/null || true

# kubit-disk volumes: the loop device nodes (the device cgroup allows only them,
# docker-compose.yml), and the kubelet's losetup makes the rest it needs.
storage=/var/lib/kubelet/storage
"$kubit/deploy/docker/node/loop-devices.sh" nodes
# A node killed outright (SIGKILL) could not detach its disks: nothing of this node
# runs yet, so any loop device on its storage is a leftover.
"$kubit/deploy/docker/node/loop-devices.sh" detach "$storage"
export PATH="$kubit/deploy/docker/node/bin:$PATH"

root=/var/lib/containerd
run=/run/containerd
cni_conf=/etc/cni/net.d
certs=/etc/containerd/certs.d
mkdir -p "$root" "$run" "$cni_conf" "$certs/docker.io" /var/lib/kubelet "$storage"
# A fresh container starts with no CNI network: the kubelet writes it from the podCIDR.
rm -f "$cni_conf"/*

fill() {
  sed -e "s|{{ROOT}}|$root|g" -e "s|{{STATE}}|$run|g" -e "s|{{ADDRESS}}|$run/containerd.sock|g" \
    -e "s|{{SANDBOX_IMAGE}}|docker.io/local/pause:1|g" -e "s|{{CNI_CONF_DIR}}|$cni_conf|g" \
    -e "s|{{REGISTRY_CONFIG_PATH}}|$certs|g" -e "s|{{MIRROR}}|$REGISTRY|g" \
    -e "s|{{REGISTRY}}|docker.io|g" -e "s|{{UPSTREAM}}|https://registry-1.docker.io|g" "$1"
}
fill "$templates/config.toml.tmpl" > /etc/containerd/config.toml
fill "$templates/hosts.toml.tmpl" > "$certs/docker.io/hosts.toml"
if grep -q '{{' /etc/containerd/config.toml "$certs/docker.io/hosts.toml"; then
  log "a placeholder in deploy/containerd's templates has no value here"; exit 1
fi

log "starting containerd"
containerd --config /etc/containerd/config.toml &
containerd_pid=$!
for _ in $(seq 1 100); do
  [ -S "$run/containerd.sock" ] && break
  kill -0 "$containerd_pid" 2>/dev/null || { log "containerd exited"; exit 1; }
  sleep 0.1
done
[ -S "$run/containerd.sock" ] || { log "containerd did not create its socket"; exit 1; }

kubeconfig=$state/kubeconfigs/kubelet-$NODE_NAME

mkdir -p /run/kubit
# supervise NAME COMMAND...: runs COMMAND again a second after it exits, until
# this supervisor gets SIGTERM (which it passes on, then waits for the daemon).
supervise() {
  local name=$1 child=""
  shift
  set +e
  trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null; wait "$child" 2>/dev/null; rm -f "/run/kubit/$name.pid"; exit 0' TERM
  while :; do
    "$@" &
    child=$!
    echo "$child" > "/run/kubit/$name.pid"
    local rc=0
    wait "$child" || rc=$?
    log "$name exited ($rc); restarting it in 1 s"
    sleep 1
  done
}

log "starting kubit-kubelet at $NODE_IP"
node $kubit/packages/kubelet/dist/src/main.bundle.mjs \
  --kubeconfig="$kubeconfig" \
  --container-runtime-endpoint="unix://$run/containerd.sock" \
  --hostname-override="$NODE_NAME" \
  --node-ip="$NODE_IP" \
  --address=0.0.0.0 \
  --port=10250 \
  --root-dir=/var/lib/kubelet \
  --local-storage-dir="$storage" \
  --tls-cert-file="$pki/kubelet-$NODE_NAME-server.crt" \
  --tls-private-key-file="$pki/kubelet-$NODE_NAME-server.key" \
  --client-ca-file="$pki/ca.crt" \
  --cni-conf-dir="$cni_conf" \
  --cni-conf-template="$templates/10-kubit.conflist.tmpl" \
  --cni-bridge-name=kubit0 \
  --cni-network-name=kubit \
  --cluster-dns=10.96.0.10 \
  --cluster-domain=cluster.local &
kubelet_pid=$!

log "starting kubit-proxy (nftables, table ip kubit-proxy, in this container's network namespace)"
supervise kubit-proxy node $kubit/packages/proxy/dist/src/main.bundle.mjs \
  --kubeconfig="$state/kubeconfigs/kube-proxy" \
  --hostname-override="$NODE_NAME" \
  --cluster-cidr="$CLUSTER_CIDR" \
  --healthz-bind-address=0.0.0.0:10256 \
  --metrics-bind-address=127.0.0.1:10249 &
proxy_pid=$!

log "starting kubit-net (${OVERLAY_MODE:-host-gw}; NetworkPolicy in this container's network namespace)"
supervise kubit-net node $kubit/packages/net/dist/src/main.bundle.mjs \
  --kubeconfig="$state/kubeconfigs/kubit-net" \
  --hostname-override="$NODE_NAME" \
  --overlay-mode="${OVERLAY_MODE:-host-gw}" \
  --underlay-address="$NODE_IP" \
  --healthz-bind-address=0.0.0.0:10263 &
net_pid=$!

dns_pid=""
if [ "${KUBIT_DNS:-}" = 1 ]; then
  log "starting kubit-dns at $NODE_IP:53"
  supervise kubit-dns node $kubit/packages/dns/dist/src/main.bundle.mjs \
    --kubeconfig="$state/kubeconfigs/kubit-dns" \
    --hostname-override="$NODE_NAME" \
    --bind-address="$NODE_IP" \
    --port=53 \
    --health-port=8080 \
    --metrics-port=9153 \
    --advertise-address="$NODE_IP" \
    --cluster-dns-ip=10.96.0.10 \
    --cluster-domain=cluster.local &
  dns_pid=$!
fi

stop() {
  set +e
  log "stopping"
  trap - TERM INT
  # Loop devices are the host's: none of this node's may outlive it (a mounted one is
  # detached when its mount goes with the container). First, as compose's stop
  # timeout may kill the rest.
  "$kubit/deploy/docker/node/loop-devices.sh" detach "$storage"
  # kubit-dns first: it marks its endpoint terminating and deletes it before it goes.
  if [ -n "$dns_pid" ]; then kill -TERM "$dns_pid" 2>/dev/null; wait "$dns_pid" 2>/dev/null; fi
  kill -TERM "$proxy_pid" "$net_pid" "$kubelet_pid" 2>/dev/null
  wait "$proxy_pid" "$net_pid" "$kubelet_pid" 2>/dev/null
  kill -TERM "$containerd_pid" 2>/dev/null
  wait "$containerd_pid" 2>/dev/null
  exit "${rc:-0}"
}
trap stop TERM INT

# The container lives as long as the kubelet and containerd do.
rc=0
wait -n "$kubelet_pid" "$containerd_pid" || rc=$?
log "the kubelet or containerd exited ($rc)"
stop
