#!/usr/bin/env bash
# Remove the pre-installed nri-cpuset plugin (what install.sh installed).
#
#   sudo deploy/preinstalled/uninstall.sh [--purge]
#
# Keeps the config file and the log unless --purge. Running containers keep the cpusets
# they have; containers created afterwards get containerd's default (every CPU).
# Same overrides as install.sh: NRI_CPUSET_PREFIX, NRI_PLUGIN_DIR, NRI_CPUSET_CONFIG,
# NRI_CPUSET_LOG_FILE, plus NRI_CPUSET_LAUNCHER (default 99-nri-cpuset) and NRI_CPUSET_RUN_DIR
# (/run/nri-cpuset, the status socket's directory).
set -euo pipefail

prefix=${NRI_CPUSET_PREFIX:-/opt/nri-cpuset}
plugin_dir=${NRI_PLUGIN_DIR:-/opt/nri/plugins}
config=${NRI_CPUSET_CONFIG:-/etc/nri-cpuset/config.toml}
log_file=${NRI_CPUSET_LOG_FILE:-/var/log/nri-cpuset.log}
launcher=$plugin_dir/${NRI_CPUSET_LAUNCHER:-99-nri-cpuset}
run_dir=${NRI_CPUSET_RUN_DIR:-/run/nri-cpuset}
venv=$prefix/venv
purge=false

say() { printf 'nri-cpuset uninstall: %s\n' "$*"; }
die() { printf 'nri-cpuset uninstall: error: %s\n' "$*" >&2; exit 1; }

case ${1:-} in
    "") ;;
    --purge) purge=true ;;
    *) die "unknown argument '$1' (usage: uninstall.sh [--purge])" ;;
esac
[[ $(id -u) -eq 0 ]] || die "run as root"

# The launcher first: from the next containerd start on, the plugin is no longer launched.
if [[ -e $launcher ]]; then
    rm -f -- "$launcher"
    say "removed $launcher"
else
    say "no launcher at $launcher"
fi
# Only a directory that is recognisably ours is removed.
if [[ -x $venv/bin/nri-cpuset ]]; then
    rm -rf -- "$venv"
    rmdir --ignore-fail-on-non-empty -- "$prefix" 2>/dev/null || true
    say "removed $venv"
else
    say "no nri-cpuset virtual environment at $venv"
fi
if $purge; then
    rm -f -- "$config" "$log_file"
    rmdir --ignore-fail-on-non-empty -- "$(dirname "$config")" 2>/dev/null || true
    rm -rf -- "$run_dir"
    say "removed $config, $log_file and $run_dir"
else
    say "kept $config and $log_file (--purge removes them)"
fi
say "a plugin containerd already started keeps running until containerd restarts:"
say "'systemctl restart containerd' stops it (running containers keep running)."
