#!/usr/bin/env bash
# Puts the real cosign (Sigstore's signing tool) at /opt/berth-tools/cosign for the tests
# (test/helpers/cosign.ts). Debian bookworm has no cosign package; trixie's (2.5.0) is a static
# Go binary, so its .deb is fetched through a PRIVATE apt sources list and state directory (the
# machine's own apt configuration is not touched) and unpacked, not installed.
# Idempotent: does nothing when the binary is already there. Override the place with
# BERTH_TOOLS_DIR (the tests read the same variable).
set -euo pipefail

tools="${BERTH_TOOLS_DIR:-/opt/berth-tools}"
target="$tools/cosign"
if [ -x "$target" ]; then
  echo "cosign already at $target ($(cat "$target.version" 2>/dev/null || echo 'version unknown'))"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/state/lists/partial" "$work/cache/archives/partial"
cat >"$work/trixie.sources" <<SOURCES
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES

apt_opts=(
  -o Dir::Etc::SourceList=/dev/null
  -o "Dir::Etc::SourceParts=$work"
  -o "Dir::State=$work/state"
  -o "Dir::Cache=$work/cache"
  -o APT::Sandbox::User=root   # the private directories are not readable by _apt
)
apt-get "${apt_opts[@]}" update
(cd "$work" && apt-get "${apt_opts[@]}" download cosign)
dpkg-deb -x "$work"/cosign_*.deb "$work/x"

mkdir -p "$tools"
install -m 0755 "$work/x/usr/bin/cosign" "$target.tmp"
mv "$target.tmp" "$target"
echo "Debian cosign $(dpkg-deb -f "$work"/cosign_*.deb Version)" >"$target.version"
echo "cosign installed at $target ($(cat "$target.version"))"
