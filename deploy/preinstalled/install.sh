#!/usr/bin/env bash
# Install nri-cpuset as a pre-installed NRI plugin: containerd starts it from its plugin
# directory whenever containerd starts, so even the first pods after boot pass through it.
#
#   sudo deploy/preinstalled/install.sh [PACKAGE]
#
# PACKAGE is what pip installs: this source tree by default (both its distributions,
# nri-cpuset and the cpuset-core it pins), a wheel file (the cpuset-core wheel of the same
# version is taken from the same directory, or from the package index), or a requirement.
# Idempotent: run it again to upgrade. It never overwrites an existing config file.
#
# Overrides (environment): NRI_CPUSET_PREFIX (default /opt/nri-cpuset), NRI_PLUGIN_DIR
# (/opt/nri/plugins, containerd's plugin_path), NRI_CPUSET_CONFIG (/etc/nri-cpuset/config.toml),
# NRI_CPUSET_LOG_FILE (/var/log/nri-cpuset.log), PYTHON (python3, must be 3.11+).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_tree=$(cd "$here/../.." && pwd)
package=${1:-$source_tree}
prefix=${NRI_CPUSET_PREFIX:-/opt/nri-cpuset}
plugin_dir=${NRI_PLUGIN_DIR:-/opt/nri/plugins}
config=${NRI_CPUSET_CONFIG:-/etc/nri-cpuset/config.toml}
log_file=${NRI_CPUSET_LOG_FILE:-/var/log/nri-cpuset.log}
python=${PYTHON:-python3}
venv=$prefix/venv

say() { printf 'nri-cpuset install: %s\n' "$*"; }
die() { printf 'nri-cpuset install: error: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "run as root (it writes $prefix, $plugin_dir and $config)"
command -v "$python" >/dev/null || die "$python not found; install Python 3.11+ or set PYTHON"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || die "$python is $("$python" -V 2>&1); nri-cpuset needs Python 3.11+ (set PYTHON)"

# 1. A dedicated virtual environment. containerd starts the plugin with only three NRI_*
#    variables (no PATH), so the launcher names this venv's python by absolute path.
if [[ -x $venv/bin/python ]]; then
    say "using the existing virtual environment $venv"
else
    say "creating the virtual environment $venv"
    "$python" -m venv "$venv" \
        || die "cannot create $venv (on Debian/Ubuntu: apt-get install python3-venv)"
fi
# nri-cpuset 0.1.0 carried cpuset_core itself. Upgraded in place, pip would install cpuset-core
# and then delete the old nri-cpuset's files, the engine's among them: remove that one first.
if "$venv/bin/python" -m pip show --files nri-cpuset 2>/dev/null | grep -q '^ *cpuset_core/'; then
    say "removing the installed nri-cpuset, which still contains the engine"
    "$venv/bin/python" -m pip uninstall --quiet --yes nri-cpuset
fi
# nri-cpuset pins cpuset-core to its own version: give pip where that comes from.
if [[ -f $package/pyproject.toml && -f $package/src/pyproject.toml ]]; then
    install_args=("$package/src" "$package")       # a source tree: src/ is the cpuset-core project
elif [[ -f $package ]]; then
    install_args=(--find-links "$(dirname "$package")" "$package")   # a wheel among wheels
else
    install_args=("$package")
fi
say "installing $package"
"$venv/bin/python" -m pip install --quiet --no-cache-dir --upgrade "${install_args[@]}"
say "installed $("$venv/bin/nri-cpuset" --version)"

# 2. The config file: installed with every default once, never overwritten.
if [[ -e $config ]]; then
    say "keeping the existing config $config"
else
    say "installing the default config $config"
    install -D -m 0644 "$here/../config.toml" "$config"
fi
# Checked before the launcher is (re)written, because on containerd 1.7 a pre-installed plugin
# that exits before registering makes containerd's NRI, and with it containerd, fail to start:
# check-config runs exactly what `run` checks before it starts (every key and value, the
# values against this machine, the kubelet's static CPU manager, NRI disabled).
"$venv/bin/nri-cpuset" check-config --config "$config" --preinstalled \
    || die "$config: see above; the launcher was not installed"

# 3. The launcher, written atomically: containerd must never see a half-written executable.
"$venv/bin/nri-cpuset" install-launcher --plugin-dir "$plugin_dir" --config "$config" \
    --log-file "$log_file"

say "done. containerd starts the plugin when it starts: enable NRI (deploy/containerd/),"
say "then 'systemctl restart containerd' (running containers keep running and keep their"
say "cpusets). The plugin logs to $log_file."
