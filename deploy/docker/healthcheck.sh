#!/bin/bash
# Docker health check for Kubit's daemons: GET the URL and exit 0 on a 200, 1
# otherwise. http through bash's /dev/tcp, https through `openssl s_client`
# (the health ports use the cluster's certificates; they are not verified
# here). Why not node or curl: the images have no curl, and starting node
# every 2 s in eight containers costs a busy 2-core machine seconds per check,
# which delays every service that waits for a healthy one.
#   healthcheck.sh URL [CLIENT_CERT CLIENT_KEY]   (the kubelet asks for a client certificate)
set -uo pipefail
url=${1:?usage: healthcheck.sh URL [CLIENT_CERT CLIENT_KEY]}
rest=${url#*://}
hostport=${rest%%/*}
path=/${rest#*/}
[ "$rest" = "$hostport" ] && path=/
host=${hostport%:*}
port=${hostport##*:}
# HTTP/1.0: the server closes the connection after its answer.
request() { printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$path" "$hostport"; }

case $url in
  https://*)
    tls=(-quiet -connect "$hostport")
    [ $# -ge 3 ] && tls+=(-cert "$2" -key "$3")
    status=$(request | openssl s_client "${tls[@]}" 2>/dev/null | head -n 1)
    ;;
  http://*)
    status=$(
      exec 3<>"/dev/tcp/$host/$port" || exit 1
      request >&3
      head -n 1 <&3
    )
    ;;
  *) echo "healthcheck.sh: not an http(s) URL: $url" >&2; exit 2 ;;
esac
case $status in
  "HTTP/1."?" 200"*) exit 0 ;;
esac
echo "$url: ${status:-no answer}" >&2
exit 1
