# Shared by the scripts: make sure a Python >= 3.11 with venv support exists, then a virtual
# environment in .venv with the given packages. Works on a fresh Debian machine as root.
set -euo pipefail

repo_root() { cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd; }

ensure_python() {
    if python3 -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        return
    fi
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
        echo "need Python >= 3.11 with the venv module (Debian: apt-get install python3-venv)" >&2
        exit 1
    fi
    echo "installing python3-venv with apt-get" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv python3-pip >/dev/null
    python3 -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' || {
        echo "python3 $(python3 -V) is older than 3.11" >&2; exit 1; }
}

# ensure_venv DIR PIP-ARGS...: create DIR if needed and pip-install PIP-ARGS into it.
ensure_venv() {
    local dir=$1; shift
    ensure_python
    [ -x "$dir/bin/python" ] || python3 -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}
