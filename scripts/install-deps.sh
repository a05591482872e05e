#!/usr/bin/env bash
# Installs every Debian package Tessera needs, skipping those already present.
# Idempotent: safe to run on every `make demo` / `make test`.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  llvm-19-dev lld-19 liblld-19-dev
  libxgboost-dev
  libzmq3-dev cppzmq-dev libsodium-dev
  libprotobuf-dev protobuf-compiler
  libsqlite3-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev
  libdnnl-dev
  libonnx-dev libonnx-testdata python3-onnx python3-numpy
  zlib1g-dev libzstd-dev libedit-dev libffi-dev libxml2-dev libcurl4-openssl-dev
  # The aarch64 worker (make worker-aarch64) and its qemu integration test.
  g++-aarch64-linux-gnu qemu-user
  libzmq3-dev:arm64 libprotobuf-dev:arm64 libsodium-dev:arm64
)

# The arm64 -dev packages above are multiarch: dpkg must know the architecture
# before apt can see them (idempotent: adding it twice is a no-op).
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  if [[ $(id -u) -ne 0 ]]; then sudo dpkg --add-architecture arm64; else dpkg --add-architecture arm64; fi
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  SUDO=sudo
else
  SUDO=
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
