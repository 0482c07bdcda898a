#!/bin/sh
# One kubit-store member of the compose cluster ($MEMBER: store-1, store-2 or
# store-3), reachable by its service name on the compose network. The same
# command line creates the member and resumes it (its data is a named volume).
set -eu
: "${MEMBER:?}" "${KUBIT_STORE_CLUSTER:?}"
pki=/state/pki
exec node /opt/kubit/packages/store/dist/src/main.bundle.mjs \
  --name="$MEMBER" \
  --data-dir=/var/lib/kubit-store/data \
  --listen-client-urls=https://0.0.0.0:2379 \
  --advertise-client-urls="https://$MEMBER:2379" \
  --listen-peer-urls=https://0.0.0.0:2380 \
  --initial-advertise-peer-urls="https://$MEMBER:2380" \
  --listen-metrics-urls=http://0.0.0.0:2381 \
  --initial-cluster="$KUBIT_STORE_CLUSTER" \
  --initial-cluster-state=new \
  --initial-cluster-token=kubit-compose \
  --cert-file="$pki/store.crt" --key-file="$pki/store.key" --trusted-ca-file="$pki/ca.crt" --client-cert-auth \
  --peer-cert-file="$pki/store.crt" --peer-key-file="$pki/store.key" --peer-trusted-ca-file="$pki/ca.crt" --peer-client-cert-auth \
  --log-level=warn
