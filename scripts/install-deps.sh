#!/usr/bin/env bash
# Installs the Debian packages Mariposa builds from (idempotent; needs root or sudo).
set -euo pipefail
PKGS=(bazel-bootstrap g++ pkg-config libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
      libabsl-dev libyaml-dev libfyaml-dev libyaml-cpp-dev prometheus-cpp-dev libsqlite3-dev libssl-dev googletest libgtest-dev libgmock-dev
      libcurl4-openssl-dev libcpp-httplib-dev nlohmann-json3-dev python3 openssl openssh-client prometheus systemd
      postgresql libpq-dev libboost-dev libjemalloc-dev tzdata
      clang-14 libclang-rt-14-dev  # the fuzz targets (scripts/fuzz.sh): libFuzzer and the sanitizers
      chromium chromium-driver python3-selenium)  # the console's browser test (tests/console)
# Node.js runs the sdc-clients conformance test (the machine image usually has it).
command -v node >/dev/null 2>&1 || PKGS+=(nodejs npm)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
# Debian's prometheus package would start a server on *:9090 at install; the
# tests run their own on loopback, so services are not started meanwhile.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
  trap '$SUDO rm -f "$policy"' EXIT
fi
# PostgreSQL: the tests start their own throwaway servers (tests/pg_server.h);
# the package must not create and start a cluster of its own.
if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
  $SUDO mkdir -p /etc/postgresql-common
  echo "create_main_cluster = false" | $SUDO tee /etc/postgresql-common/createcluster.conf >/dev/null
fi
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -o Dpkg::Options::=--force-confold "${missing[@]}" >/dev/null
