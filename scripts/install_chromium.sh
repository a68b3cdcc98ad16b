#!/usr/bin/env bash
# Debian's Chromium and its driver for the browser tests (playwright drives /usr/bin/chromium;
# nothing downloads a browser of its own).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" != 0 ]; then SUDO=sudo; else SUDO=; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
/usr/bin/chromium --version
