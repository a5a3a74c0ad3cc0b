#!/usr/bin/env bash
# Installs the headless browser the dashboard's browser test drives:
# Debian's chromium and chromium-driver (chromedriver speaks the W3C
# WebDriver protocol the test uses over plain HTTP).
#
# Why Debian's packages: the environment reaches Debian's archive but not the
# sites that host prebuilt browser builds, and a browser test must never skip
# (internal/dashboard's TestDashboardInChromium fails when the browser is
# missing). Idempotent: does nothing when both are already installed.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }

if have chromium && have chromedriver; then
	echo "chromium.sh: $(chromium --version 2>/dev/null | head -n1) and chromedriver already installed; nothing to do"
	exit 0
fi

sudo=""
if [[ "$(id -u)" != 0 ]]; then
	have sudo || { echo "chromium.sh: not root and no sudo: install the Debian packages chromium and chromium-driver" >&2; exit 1; }
	sudo="sudo"
fi

echo "chromium.sh: installing chromium and chromium-driver from Debian"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends chromium chromium-driver fonts-dejavu-core

have chromium || { echo "chromium.sh: chromium is still not on PATH after the install" >&2; exit 1; }
have chromedriver || { echo "chromium.sh: chromedriver is still not on PATH after the install" >&2; exit 1; }
echo "chromium.sh: $(chromium --version 2>/dev/null | head -n1) installed"
