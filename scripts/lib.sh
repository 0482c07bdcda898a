# Shared set-up for scripts/test and scripts/up. Sourced, not run.
# Installs what Kubit needs on a fresh Debian/Ubuntu machine that has only Node 20.

KUBIT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PNPM_VERSION=10.34.9

# System packages and the commands that prove each one is there.
#   containerd runc containernetworking-plugins: the container runtime and pod networking
#   busybox-static umoci skopeo: building the test images offline
#   docker-registry: a real OCI registry the nodes pull from
#   etcd-server etcd-client: the real etcd the store is compared with, and etcdctl
#   iproute2: network namespaces and routes
#   openssl: the cluster PKI
#   nginx-light: the nginx the test image is built from
#   wget: the busybox and nginx images carry Debian's wget (busybox-static's crashes on names here)
#   nftables conntrack: kubit-proxy programs Services into the kernel and clears stale UDP flows
#   e2fsprogs util-linux: the kubelet formats and grows kubit-disk volumes (mkfs.ext4, resize2fs) on loop devices (losetup)
SYSTEM_PACKAGES="openssl containerd runc containernetworking-plugins busybox-static umoci skopeo docker-registry etcd-server etcd-client iproute2 nginx-light wget nftables conntrack e2fsprogs util-linux"
SYSTEM_COMMANDS="openssl containerd runc /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/portmap /usr/lib/cni/loopback busybox umoci skopeo /usr/bin/docker-registry etcd etcdctl ip /usr/sbin/nginx /usr/bin/wget /usr/sbin/nft /usr/sbin/conntrack /usr/sbin/mkfs.ext4 /usr/sbin/resize2fs /usr/sbin/losetup"

# What only the tests need, on top (scripts/test adds these; scripts/up does not):
#   dnsutils dnsmasq-base: dig checks cluster DNS answers; dnsmasq is the DNS peer bench:services measures against
#   openssh-server: the multi-host lab's installer runs over ssh to network-namespace hosts
#   (nsenter and setsid, from util-linux, start each host's sshd in its namespace)
#   docker.io docker-compose debootstrap: the compose test runs a private Docker Engine,
#   builds the offline base image (scripts/base-image) and runs docker-compose.yml
TEST_SYSTEM_PACKAGES="dnsutils dnsmasq-base openssh-server docker.io docker-compose debootstrap"
TEST_SYSTEM_COMMANDS="dig /usr/sbin/dnsmasq /usr/sbin/sshd ssh ssh-keygen nsenter setsid /usr/sbin/dockerd /usr/bin/docker-compose /usr/sbin/debootstrap"

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

have() { case "$1" in /*) [ -x "$1" ] ;; *) command -v "$1" >/dev/null 2>&1 ;; esac; }

missing_system_commands() {
  local c out=""
  for c in $SYSTEM_COMMANDS; do have "$c" || out="$out $c"; done
  printf '%s' "$out"
}

# scripts/test: the tests' packages too. Called before ensure_system_packages.
with_test_packages() {
  SYSTEM_PACKAGES="$SYSTEM_PACKAGES $TEST_SYSTEM_PACKAGES"
  SYSTEM_COMMANDS="$SYSTEM_COMMANDS $TEST_SYSTEM_COMMANDS"
}

ensure_node() {
  have node || die "Node.js 20 is required (https://nodejs.org); 'node' is not on PATH."
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  [ "$major" -ge 20 ] || die "Node.js 20 or newer is required; found $(node -v)."
}

ensure_system_packages() {
  local missing
  missing=$(missing_system_commands)
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" != 0 ]; then
    die "missing:$missing. Install them as root: apt-get install -y $SYSTEM_PACKAGES (or run this script as root)."
  fi
  have apt-get || die "missing:$missing, and there is no apt-get to install them with. Install: $SYSTEM_PACKAGES."
  say "installing system packages: $SYSTEM_PACKAGES"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || die "apt-get update failed"
  # policy-rc.d keeps Debian from starting the packaged services (etcd, registry,
  # nginx, containerd, dockerd, sshd) on install: Kubit and its tests start their
  # own instances on their own ports and sockets.
  local prc=/usr/sbin/policy-rc.d created_prc=""
  if [ ! -e $prc ]; then printf '#!/bin/sh\nexit 101\n' > $prc && chmod +x $prc && created_prc=1; fi
  apt-get install -y -qq --no-install-recommends $SYSTEM_PACKAGES >/dev/null || { [ -n "$created_prc" ] && rm -f $prc; die "apt-get install failed"; }
  [ -n "$created_prc" ] && rm -f $prc
  missing=$(missing_system_commands)
  [ -z "$missing" ] || die "still missing after apt-get install:$missing"
}

ensure_pnpm() {
  if ! have pnpm || [ "$(pnpm -v 2>/dev/null)" != "$PNPM_VERSION" ]; then
    say "installing pnpm $PNPM_VERSION"
    npm install -g "pnpm@$PNPM_VERSION" >/dev/null 2>&1 || die "could not install pnpm with npm (npm install -g pnpm@$PNPM_VERSION)"
  fi
}

ensure_workspace() {
  ensure_node
  ensure_pnpm
  cd "$KUBIT_ROOT" || exit 1
  say "installing workspace packages"
  pnpm install --frozen-lockfile --reporter=silent || die "pnpm install --frozen-lockfile failed"
  say "building"
  pnpm -s build || die "build failed"
}
