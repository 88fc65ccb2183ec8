#!/bin/sh
# Fetches a nats-server that can sync before it acknowledges (sync_interval: always came in 2.10) for the
# tests and benches: Debian 12's own package is 2.9.10. The binary comes from Debian 13's (trixie) package,
# pinned by its digest, and is unpacked into a cache beside nothing else of the system; test/helpers/
# nats-server.ts finds it there. Prints the binary's path.
set -eu
VERSION=2.10.27
DEB=nats-server_2.10.27-1+b2_amd64.deb
SHA256=6d913ac987b78734c08537c2adeb1526cf735f216173a9170d94b185fcfe6f8a
DIR="${XDG_CACHE_HOME:-$HOME/.cache}/weir/nats-server-$VERSION"
BIN="$DIR/nats-server"

if [ -x "$BIN" ] && "$BIN" --version 2>/dev/null | grep -q "v$VERSION"; then
  echo "$BIN"
  exit 0
fi
[ "$(uname -m)" = x86_64 ] || { echo "fetch-nats-server: only x86_64 is fetched; set WEIR_TEST_NATS_SERVER to a nats-server >= 2.10" >&2; exit 1; }
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
# The Debian mirror apt is set up with here (deb822 sources or a one-line sources.list).
MIRROR="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}')"
[ -n "$MIRROR" ] || MIRROR="$(awk '$1 == "deb" && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)"
[ -n "$MIRROR" ] || { echo "fetch-nats-server: no Debian mirror in apt's sources" >&2; exit 1; }
curl -fsSL -o "$TMP/$DEB" "${MIRROR%/}/pool/main/n/nats-server/$DEB"
echo "$SHA256  $TMP/$DEB" | sha256sum -c - >/dev/null
dpkg-deb -x "$TMP/$DEB" "$TMP/root"
mkdir -p "$DIR"
cp "$TMP/root/usr/sbin/nats-server" "$BIN.partial"
mv "$BIN.partial" "$BIN"
"$BIN" --version >&2
echo "$BIN"
