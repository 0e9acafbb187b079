#!/usr/bin/env bash
# Installs what dagrad needs to build and test on Debian 12, if missing.
# Run as root (or with sudo available). Idempotent: installs nothing when
# every package is present.
#
#   bash tools/setup.sh            # build + test dependencies
#   bash tools/setup.sh --torch    # also python3-torch, python3-regex (goldens, benchmarks)
#   bash tools/setup.sh --fuzz     # also clang and libFuzzer (the fuzz targets)
#   bash tools/setup.sh --onnx     # also node and ONNX Runtime (tools/onnx/, npm)
# The optional parts' libraries (ONNX, Open MPI) are in the default set;
# without them dagrad builds and passes with those parts left out.
set -euo pipefail

packages=(build-essential cmake libabsl-dev libblis-dev libgtest-dev libgmock-dev
          libbenchmark-dev nlohmann-json3-dev libicu-dev graphviz python3
          libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata python3-onnx
          libopenmpi-dev openmpi-bin)
for arg in "$@"; do
  case "$arg" in
    --torch) packages+=(python3-torch python3-numpy python3-regex) ;;
    --fuzz) packages+=(clang libclang-rt-14-dev libomp-14-dev) ;;
    --onnx)  # node from Debian unless one (NodeSource's, say, with its npm) is on the PATH
      onnx_runtime=1
      command -v node >/dev/null || packages+=(nodejs)
      command -v npm >/dev/null || packages+=(npm) ;;
    *) echo "tools/setup.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

# ONNX Runtime for Node, into tools/onnx/node_modules (git-ignored). Its
# install script fetches a CUDA provider from the network: skipped, the CPU
# runtime needs none.
install_onnx_runtime() {
  local dir
  dir="$(dirname "$0")/onnx"
  if [[ -n "${onnx_runtime:-}" && ! -d "$dir/node_modules/onnxruntime-node" ]]; then
    (cd "$dir" && npm install --ignore-scripts --no-audit --no-fund --silent)
  fi
}

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  install_onnx_runtime
  exit 0
fi

echo "installing: ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then
    sudo="sudo"
  else
    echo "tools/setup.sh: run as root to install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_onnx_runtime
