#!/bin/sh
# Runs once, at image build time: starts the registry on loopback, pushes the
# test images (built from this image's busybox-static and nginx-light by the
# testkit's builder) and stops it. The images then live in the image's layer.
set -eu
sed 's/0.0.0.0:5000/127.0.0.1:5000/' /opt/kubit-docker/config.yml > /tmp/seed-config.yml
/usr/bin/docker-registry serve /tmp/seed-config.yml &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
i=0
until node -e "fetch('http://127.0.0.1:5000/v2/').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"; do
  i=$((i + 1)); [ $i -lt 50 ] || { echo "the registry did not start" >&2; exit 1; }
  sleep 0.2
done
node --input-type=module -e "
const { pushTestImages } = await import('/opt/kubit-images/images.mjs');
for (const i of await pushTestImages('127.0.0.1:5000')) console.log('seeded', i.name);
"
kill $pid
wait $pid || true
trap - EXIT
rm -rf /tmp/seed-config.yml /tmp/kubit-test-images-*
