#!/bin/bash
# A Kubit node in a kind-like container (see docker-compose.yml): its own
# containerd (configured from deploy/containerd's templates, with a docker.io
# mirror pointing at the compose registry), the route sync that lets pods reach
# pods on the other nodes, and kubit-kubelet in the foreground.
#
# Environment (set by docker-compose.yml):
#   NODE_NAME   the node's name (its certificates are kubelet-NAME*)
#   NODE_IP     this container's address on the compose network (static, in the certificates)
#   REGISTRY    host:port of the registry the docker.io mirror points at
set -euo pipefail
: "${NODE_NAME:?}" "${NODE_IP:?}" "${REGISTRY:?}"
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

root=/var/lib/containerd
run=/run/containerd
cni_conf=/etc/cni/net.d
certs=/etc/containerd/certs.d
mkdir -p "$root" "$run" "$cni_conf" "$certs/docker.io" /var/lib/kubelet
# A fresh container starts with no CNI network: the kubelet writes it from the podCIDR.
rm -f "$cni_conf"/*

fill() {
  sed -e "s|{{ROOT}}|$root|g" -e "s|{{STATE}}|$run|g" -e "s|{{ADDRESS}}|$run/containerd.sock|g" \
    -e "s|{{SANDBOX_IMAGE}}|docker.io/local/pause:1|g" -e "s|{{CNI_CONF_DIR}}|$cni_conf|g" \
    -e "s|{{REGISTRY_CONFIG_PATH}}|$certs|g" -e "s|{{MIRROR}}|$REGISTRY|g" "$1"
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
node $kubit/deploy/docker/node/route-sync.mjs --kubeconfig "$kubeconfig" --node-name "$NODE_NAME" &

log "starting kubit-kubelet at $NODE_IP"
exec node $kubit/packages/kubelet/dist/src/main.bundle.mjs \
  --kubeconfig="$kubeconfig" \
  --container-runtime-endpoint="unix://$run/containerd.sock" \
  --hostname-override="$NODE_NAME" \
  --node-ip="$NODE_IP" \
  --address=0.0.0.0 \
  --port=10250 \
  --root-dir=/var/lib/kubelet \
  --tls-cert-file="$pki/kubelet-$NODE_NAME-server.crt" \
  --tls-private-key-file="$pki/kubelet-$NODE_NAME-server.key" \
  --client-ca-file="$pki/ca.crt" \
  --cni-conf-dir="$cni_conf" \
  --cni-conf-template="$templates/10-kubit.conflist.tmpl" \
  --cni-bridge-name=kubit0 \
  --cni-network-name=kubit
