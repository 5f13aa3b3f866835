#!/usr/bin/env bash
# Set-up for `make run` / `make test`: system libraries, .venv, the project and its dependencies.
# Idempotent: a stamp file records what was installed, so the second run takes a second.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
PY=${PYTHON:-python3}

# Qt's xcb platform, OpenGL under Xvfb, Open3D's libusb, fonts for rendering text.
APT_PACKAGES="libusb-1.0-0 libxcb-cursor0 libxkbcommon-x11-0 libxkbcommon0 libxcb-icccm4 libxcb-image0 \
libxcb-keysyms1 libxcb-randr0 libxcb-render-util0 libxcb-shape0 libxcb-xinerama0 libxcb-xkb1 libegl1 \
libgl1 libopengl0 libglib2.0-0 libfontconfig1 libdbus-1-3 fonts-dejavu-core xvfb xauth libgl1-mesa-dri"
if ! "$PY" -c "import ensurepip, venv" >/dev/null 2>&1; then
  APT_PACKAGES="$APT_PACKAGES python3-venv python3-dev"
fi

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in $APT_PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ]; then
    echo "bootstrap: installing system packages: ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "bootstrap: these system packages are missing; install them with:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "bootstrap: creating $VENV" >&2
  "$PY" -m venv "$VENV"
fi

# pip, quietly: its output is shown only when it fails.
pip_quiet() {
  local log
  log=$(mktemp)
  if ! "$VENV/bin/python" -m pip "$@" >"$log" 2>&1; then
    grep -v "is ignored: it is neither" "$log" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}

stamp="$VENV/.workbench-installed"
want=$(cat pyproject.toml scripts/bootstrap.sh | sha1sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "bootstrap: installing the project and its dependencies into $VENV (first time: a few minutes)" >&2
  pip_quiet install --upgrade pip setuptools wheel
  # The CPU wheel first, so that no dependency pulls a multi-GB CUDA build of torch.
  if ! "$VENV/bin/python" -c "import torch" >/dev/null 2>&1; then
    pip_quiet install "torch==2.13.0" \
      || pip_quiet install "torch>=2.4" --index-url https://download.pytorch.org/whl/cpu
  fi
  pip_quiet install -e ".[test]"
  echo "$want" > "$stamp"
fi
