#!/bin/sh
# Headless Chromium for the site's browser tests (tests/test_site.py), from Debian's archive; never a
# browser download by Playwright. Idempotent: does nothing when /usr/bin/chromium is already there.
set -eu
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends chromium fonts-liberation
