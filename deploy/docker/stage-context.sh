#!/usr/bin/env bash
# Stages the build context of Kubit's images (deploy/docker/Dockerfile): the
# built workspace (each package's package.json, dist/ without tests and
# benchmarks, proto/), its production dependencies installed by pnpm from the
# lockfile, the containerd templates, scripts/pki and deploy/docker itself.
#
#   deploy/docker/stage-context.sh [DIR]     (default: .kubit/compose-context)
#
# Why on the host: pnpm installs the dependencies offline from this machine's
# pnpm store (the workspace's own `pnpm install` filled it), so building the
# images needs no npm registry and no TLS set-up inside the build containers.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
ctx=${1:-$root/.kubit/compose-context}
die() { printf 'stage-context: %s\n' "$*" >&2; exit 1; }

command -v pnpm >/dev/null || die "pnpm is not installed (./scripts/test and ./scripts/up install it)"
for p in store apiserver scheduler controllers kubelet cli testkit; do
  [ -f "$root/packages/$p/dist/src/main.js" ] || [ -f "$root/packages/$p/dist/src/index.js" ] \
    || die "packages/$p/dist is missing: run 'pnpm build' first"
done

rm -rf "$ctx"
mkdir -p "$ctx/packages" "$ctx/deploy" "$ctx/scripts"
cp "$root/package.json" "$root/pnpm-lock.yaml" "$root/pnpm-workspace.yaml" "$ctx/"
for dir in "$root"/packages/*/; do
  name=$(basename "$dir")
  [ -f "$dir/package.json" ] || continue
  mkdir -p "$ctx/packages/$name"
  cp "$dir/package.json" "$ctx/packages/$name/"
  [ -d "$dir/proto" ] && cp -r "$dir/proto" "$ctx/packages/$name/"
  if [ -d "$dir/dist/src" ]; then
    mkdir -p "$ctx/packages/$name/dist"
    cp -r "$dir/dist/src" "$ctx/packages/$name/dist/src"
  fi
done
cp -r "$root/deploy/containerd" "$root/deploy/docker" "$ctx/deploy/"
cp "$root/scripts/pki" "$ctx/scripts/"
# Maps and declarations are not needed at run time.
find "$ctx/packages" \( -name '*.map' -o -name '*.d.ts' \) -delete

(cd "$ctx" && CI=1 pnpm install --prod --frozen-lockfile --offline --reporter=silent) \
  || die "pnpm install --prod --offline failed in $ctx (is the workspace installed? run 'pnpm install' in $root)"
echo "$ctx"
