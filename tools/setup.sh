#!/usr/bin/env bash
# Installs what dagrad needs to build and test on Debian 12, if missing.
# Run as root (or with sudo available). Idempotent: installs nothing when
# every package is present.
#
#   bash tools/setup.sh            # build + test dependencies
#   bash tools/setup.sh --torch    # also python3-torch, python3-regex (goldens, benchmarks)
#   bash tools/setup.sh --fuzz     # also clang and libFuzzer (the fuzz targets)
#   bash tools/setup.sh --onnx     # also node and ONNX Runtime (tools/onnx/, npm)
#   bash tools/setup.sh --browser  # also chromium and puppeteer-core (the viewer's browser test)
# The default set includes node and npm, which install the graph viewer's
# layout engine (elkjs, pinned by tools/viewer/package-lock.json) into
# tools/viewer/node_modules, embedded by the next build.
# The optional parts' libraries (ONNX, Open MPI) are in the default set;
# without them dagrad builds and passes with those parts left out.
set -euo pipefail

packages=(build-essential cmake libabsl-dev libblis-dev libgtest-dev libgmock-dev
          libbenchmark-dev nlohmann-json3-dev libicu-dev graphviz python3
          libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata python3-onnx
          libopenmpi-dev openmpi-bin)
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)
for arg in "$@"; do
  case "$arg" in
    --torch) packages+=(python3-torch python3-numpy python3-regex) ;;
    --fuzz) packages+=(clang libclang-rt-14-dev libomp-14-dev) ;;
    --onnx) onnx_runtime=1 ;;  # node from Debian unless one (NodeSource's, say) is on the PATH
    --browser) browser=1; packages+=(chromium) ;;
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

# The viewer's npm packages, into tools/viewer/node_modules (git-ignored):
# elkjs always; puppeteer-core (an optional dependency) with --browser.
# No install scripts run: puppeteer-core's would download a browser, and
# the test drives Debian's chromium.
install_viewer() {
  local dir omit="--omit=optional"
  dir="$(dirname "$0")/viewer"
  [[ -n "${browser:-}" ]] && omit=""
  if [[ ! -d "$dir/node_modules/elkjs" || ( -n "${browser:-}" && ! -d "$dir/node_modules/puppeteer-core" ) ]]; then
    (cd "$dir" && npm ci $omit --ignore-scripts --no-audit --no-fund --silent)
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
  install_viewer
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
install_viewer
