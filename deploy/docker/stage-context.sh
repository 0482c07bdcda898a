#!/usr/bin/env bash
# Stages the build context of Kubit's images (deploy/docker/Dockerfile):
#   DIR/Dockerfile   a copy of deploy/docker/Dockerfile
#   DIR/kubit/       the built workspace: each package's package.json, dist/
#                    without tests and benchmarks, proto/; its production
#                    dependencies installed by pnpm from the lockfile; the
#                    containerd templates, scripts/pki and deploy/docker itself
#   DIR/registry/    the storage of a registry holding the test images (pause,
#                    busybox, nginx), for the registry image
#
#   deploy/docker/stage-context.sh [DIR]     (default: .kubit/compose-context)
#
# Why on the host: pnpm installs the dependencies offline from this machine's
# pnpm store (the workspace's own `pnpm install` filled it), and the test
# images are built by the testkit from this machine's busybox-static and
# nginx-light and pushed with its skopeo into its docker-registry (all
# installed by scripts/up and scripts/test), so building the images needs no
# registry on the internet and runs no command inside a build container.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
ctx=${1:-$root/.kubit/compose-context}
die() { printf 'stage-context: %s\n' "$*" >&2; exit 1; }

command -v pnpm >/dev/null || die "pnpm is not installed (./scripts/test and ./scripts/up install it)"
for cmd in /usr/bin/docker-registry skopeo busybox /usr/sbin/nginx; do
  case $cmd in /*) [ -x "$cmd" ] ;; *) command -v "$cmd" >/dev/null ;; esac \
    || die "$cmd is missing (apt-get install -y docker-registry skopeo busybox-static nginx-light)"
done
for p in store apiserver scheduler controllers kubelet proxy dns net; do
  [ -f "$root/packages/$p/dist/src/main.bundle.mjs" ] || die "packages/$p/dist is not built: run 'pnpm build' first"
done
[ -f "$root/packages/testkit/dist/src/images.js" ] || die "packages/testkit/dist is not built: run 'pnpm build' first"

rm -rf "$ctx"
app=$ctx/kubit
mkdir -p "$app/packages" "$app/deploy" "$app/scripts" "$ctx/registry"
cp "$root/deploy/docker/Dockerfile" "$ctx/Dockerfile"
cp "$root/package.json" "$root/pnpm-lock.yaml" "$root/pnpm-workspace.yaml" "$app/"
# pnpm-workspace.yaml names patches of dependencies: pnpm wants them even where --prod skips them.
[ -d "$root/patches" ] && cp -r "$root/patches" "$app/"
for dir in "$root"/packages/*/; do
  name=$(basename "$dir")
  [ -f "$dir/package.json" ] || continue
  mkdir -p "$app/packages/$name"
  cp "$dir/package.json" "$app/packages/$name/"
  [ -d "$dir/proto" ] && cp -r "$dir/proto" "$app/packages/$name/"
  if [ -d "$dir/dist/src" ]; then
    mkdir -p "$app/packages/$name/dist"
    cp -r "$dir/dist/src" "$app/packages/$name/dist/src"
  fi
done
cp -r "$root/deploy/containerd" "$root/deploy/docker" "$app/deploy/"
cp "$root/scripts/pki" "$app/scripts/"
# Maps and declarations are not needed at run time.
find "$app/packages" \( -name '*.map' -o -name '*.d.ts' \) -delete

(cd "$app" && CI=1 pnpm install --prod --frozen-lockfile --offline --reporter=silent) \
  || die "pnpm install --prod --offline failed in $app (is the workspace installed? run 'pnpm install' in $root)"

# The registry's storage: this machine's docker-registry on a free loopback
# port, writing into DIR/registry, gets the test images pushed into it.
port=$(node -e "const s = require('node:net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })")
cat > "$ctx/registry.yml" <<EOF
version: 0.1
log: { level: error }
storage: { filesystem: { rootdirectory: $ctx/registry } }
http: { addr: 127.0.0.1:$port }
EOF
/usr/bin/docker-registry serve "$ctx/registry.yml" > "$ctx/registry.log" 2>&1 &
registry_pid=$!
trap 'kill $registry_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  node -e "fetch('http://127.0.0.1:$port/v2/').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))" && break
  kill -0 $registry_pid 2>/dev/null || { cat "$ctx/registry.log" >&2; die "docker-registry exited"; }
  sleep 0.2
done
node --input-type=module -e "
const { pushTestImages } = await import('$root/packages/testkit/dist/src/images.js');
await pushTestImages('127.0.0.1:$port');
" || die "pushing the test images into the registry storage failed"
kill $registry_pid
wait $registry_pid 2>/dev/null || true
trap - EXIT
rm -f "$ctx/registry.yml" "$ctx/registry.log"
echo "$ctx"
