#!/bin/bash
# The compose cluster's one-shot set-up (service "init"): the PKI (scripts/pki,
# which keeps what exists, so a restart resumes the same cluster) and a
# kubeconfig per client, in the state directory mounted at /state (on the host:
# .kubit/compose/ by default).
#   /state/pki/            certificates and keys, and sa.key/sa.pub (ServiceAccount tokens)
#   /state/kubeconfigs/    what the daemons use (server https://apiserver:6443)
#   /state/kubeconfig      the admin's, for the host (server https://127.0.0.1:PORT,
#                          certificates embedded so the file works from anywhere)
set -euo pipefail
state=/state
: "${KUBIT_APISERVER_PORT:?}" "${KUBIT_NODE_IPS:?space-separated node-N=IP list}"
: "${KUBIT_APISERVER_IP:?the compose address of the apiserver, its advertise address}"
pki=$state/pki
sans=(apiserver "$KUBIT_APISERVER_IP" store-1 store-2 store-3)
nodes=()
for pair in $KUBIT_NODE_IPS; do
  nodes+=(--node "${pair%%=*}")
  sans+=("${pair%%=*}" "${pair#*=}")
done
/opt/kubit/scripts/pki "$pki" "${nodes[@]}" "${sans[@]}"
# The daemons run as root in their containers; the host's user may read the certificates.
chmod 644 "$pki"/*.crt

b64() { base64 -w0 < "$1"; }

# kubeconfig FILE SERVER CERT USER EMBED
kubeconfig() {
  local file=$1 server=$2 cert=$3 user=$4 embed=$5 tmp
  tmp=$(mktemp "$file.XXXXXX")
  {
    printf 'apiVersion: v1\nkind: Config\nclusters:\n- name: kubit-compose\n  cluster:\n    server: %s\n' "$server"
    if [ "$embed" = 1 ]; then
      printf '    certificate-authority-data: %s\n' "$(b64 "$pki/ca.crt")"
    else
      printf '    certificate-authority: %s\n' "$pki/ca.crt"
    fi
    printf 'users:\n- name: %s\n  user:\n' "$user"
    if [ "$embed" = 1 ]; then
      printf '    client-certificate-data: %s\n    client-key-data: %s\n' "$(b64 "$pki/$cert.crt")" "$(b64 "$pki/$cert.key")"
    else
      printf '    client-certificate: %s\n    client-key: %s\n' "$pki/$cert.crt" "$pki/$cert.key"
    fi
    printf 'contexts:\n- name: kubit-compose\n  context:\n    cluster: kubit-compose\n    user: %s\ncurrent-context: kubit-compose\n' "$user"
  } > "$tmp"
  chmod 600 "$tmp"
  mv "$tmp" "$file"
}

mkdir -p "$state/kubeconfigs"
internal=https://apiserver:6443
kubeconfig "$state/kubeconfigs/scheduler" "$internal" scheduler system:kube-scheduler 0
kubeconfig "$state/kubeconfigs/controller-manager" "$internal" controller-manager system:kube-controller-manager 0
kubeconfig "$state/kubeconfigs/kube-proxy" "$internal" kube-proxy system:kube-proxy 0
kubeconfig "$state/kubeconfigs/kubit-dns" "$internal" kubit-dns system:kubit-dns 0
kubeconfig "$state/kubeconfigs/kubit-net" "$internal" kubit-net system:kubit-net 0
for pair in $KUBIT_NODE_IPS; do
  n=${pair%%=*}
  kubeconfig "$state/kubeconfigs/kubelet-$n" "$internal" "kubelet-$n" "system:node:$n" 0
done
kubeconfig "$state/kubeconfig" "https://127.0.0.1:$KUBIT_APISERVER_PORT" admin admin 1
echo "PKI and kubeconfigs ready in $state; on the host: export KUBECONFIG=<state dir>/kubeconfig"
