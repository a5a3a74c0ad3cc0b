#!/usr/bin/env bash
# Installs systemd-analyze, which deploy's test runs to verify the systemd
# units of deploy/systemd (Debian's package systemd; nothing is started).
# A deployment kit's check must never skip, so the test fails without it.
# Idempotent: does nothing when it is already installed.
set -euo pipefail

if command -v systemd-analyze >/dev/null 2>&1; then
	echo "systemd.sh: $(systemd-analyze --version | head -n1) already installed; nothing to do"
	exit 0
fi
sudo=""
if [[ "$(id -u)" != 0 ]]; then
	command -v sudo >/dev/null 2>&1 || { echo "systemd.sh: not root and no sudo: install the Debian package systemd" >&2; exit 1; }
	sudo="sudo"
fi
echo "systemd.sh: installing systemd (for systemd-analyze) from Debian"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends systemd
command -v systemd-analyze >/dev/null 2>&1 || { echo "systemd.sh: systemd-analyze is still not on PATH after the install" >&2; exit 1; }
