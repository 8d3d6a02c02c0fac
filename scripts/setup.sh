#!/usr/bin/env bash
# One-time set-up on a fresh Debian/Ubuntu machine: the system libraries Open3D, pyrealsense2 and
# the browser tests load, then a virtual environment with the project and its test tools.
set -euo pipefail
cd "$(dirname "$0")/.."
SYSTEM_PACKAGES="libgl1 libegl1 libgomp1 libusb-1.0-0 chromium fonts-dejavu-core"
missing=""
for p in $SYSTEM_PACKAGES; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "installing system packages:$missing"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# Installed once per pyproject.toml: `make demo` and `make test` run this every time, and pip's
# editable build prints a page of warnings before the dashboard's links otherwise.
STAMP=.venv/.installed-pyproject
if ! cmp -s pyproject.toml "$STAMP" || ! .venv/bin/python -c "import zendo, coal" 2>/dev/null; then
  .venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
  .venv/bin/python -m pip install -q -e ".[test]" 2>&1 | grep -v '^WARNING: Location' \
    | sed '/BuildBackendWarning: Editable installation/,/WheelFile(wheel_path/d' || true
  .venv/bin/python -c "import zendo, coal" || { echo "set-up failed: the project did not install" >&2; exit 1; }
  .venv/bin/python -c "import vision.fitkernel as k; k.warm()"  # compile the pose fit's kernels once, now
  cp pyproject.toml "$STAMP"
fi
