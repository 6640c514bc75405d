#!/usr/bin/env bash
# Hosts on one Linux machine: network namespaces joined by veth pairs to a bridge, one subnet, for running a sweep's
# scheduler, workers, driver and object store on hosts of their own (and for the tests that do):
#   sudo deploy/netns/hosts.sh start PREFIX SUBNET HOST...   # e.g. start oc 10.250.0 sched w1 w2 s3 drv
#   sudo ip netns exec PREFIX-w1 dask worker tcp://10.250.0.1:8786 --host 10.250.0.2   # run a program on a host
#   sudo deploy/netns/hosts.sh run PREFIX drv ordercube run c.yaml ...  # the same, the host named HOST too
#   sudo deploy/netns/hosts.sh stop PREFIX                    # removes the namespaces and the bridge
# HOST i (from 1) is the namespace PREFIX-HOST at SUBNET.i/24, with its loopback up; the bridge PREFIXbr holds
# SUBNET.254, so this machine's own namespace reaches every host (and a host reaches this machine there). `start`
# prints one line per host: NAME ADDRESS. `run` executes a program on a host under the host's own name (a UTS
# namespace of its own: `hostname` says HOST, as a lock naming its holder's host must), replaced by it (same pid).
# Needs root, iproute2 (`ip`) and, for `run`, util-linux (`unshare`); nothing else is installed or written.
# Exit codes: 2 bad input, 3 not root or no `ip` (no `unshare`, for run), 4 a namespace or link could not be made (what
# was made is removed).
set -euo pipefail

usage() { echo "usage: $0 start PREFIX SUBNET HOST... | run PREFIX HOST COMMAND... | stop PREFIX" >&2; exit 2; }
action=${1:-}
prefix=${2:-}
[[ $prefix =~ ^[a-z][a-z0-9]{0,7}$ ]] \
    || { echo "PREFIX=$prefix: give 1-8 lowercase letters or digits, starting with a letter (e.g. oc)" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "$0 makes network namespaces: run it as root" >&2; exit 3; }
command -v ip >/dev/null || { echo "no 'ip' command: install iproute2 (apt-get install iproute2)" >&2; exit 3; }

stop() {
    local name
    for name in $(ip netns list | awk '{print $1}' | grep "^$prefix-" || true); do
        ip netns pids "$name" | xargs -r kill -9 2>/dev/null || true  # what runs on it goes with it
        ip netns del "$name"
    done
    ip link del "${prefix}br" 2>/dev/null || true
}

start() {
    local subnet=$1; shift
    [[ $subnet =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]] \
        || { echo "SUBNET=$subnet: give the first three numbers of a /24, e.g. 10.250.0" >&2; exit 2; }
    (( $# >= 1 && $# <= 250 )) || { echo "give 1 to 250 host names after SUBNET" >&2; exit 2; }
    local host i=0
    for host in "$@"; do
        [[ $host =~ ^[a-z][a-z0-9]{0,11}$ ]] || { echo "HOST=$host: give 1-12 lowercase letters or digits" >&2; exit 2; }
    done
    ip link show "${prefix}br" >/dev/null 2>&1 && { echo "${prefix}br exists: stop $prefix first" >&2; exit 2; }
    trap 'stop; echo "could not make the hosts of $prefix (see above); nothing is left" >&2; exit 4' ERR
    ip link add "${prefix}br" type bridge
    ip addr add "$subnet.254/24" dev "${prefix}br"
    ip link set "${prefix}br" up
    for host in "$@"; do
        i=$((i + 1))
        ip netns add "$prefix-$host"
        ip link add "${prefix}h${i}" type veth peer name "${prefix}b${i}"
        ip link set "${prefix}h${i}" netns "$prefix-$host"
        ip link set "${prefix}b${i}" master "${prefix}br"
        ip link set "${prefix}b${i}" up
        ip netns exec "$prefix-$host" ip addr add "$subnet.$i/24" dev "${prefix}h${i}"
        ip netns exec "$prefix-$host" ip link set "${prefix}h${i}" up
        ip netns exec "$prefix-$host" ip link set lo up
        echo "$prefix-$host $subnet.$i"
    done
    trap - ERR
}

run() {
    local host=$1; shift
    ip netns list | awk '{print $1}' | grep -qx "$prefix-$host" \
        || { echo "HOST=$host: no namespace $prefix-$host; make it with: $0 start $prefix SUBNET $host" >&2; exit 2; }
    command -v unshare >/dev/null || { echo "no 'unshare' command: install util-linux" >&2; exit 3; }
    exec ip netns exec "$prefix-$host" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$host" "$@"
}

case $action in
    start) (( $# >= 4 )) || usage; shift 2; start "$@" ;;
    run) (( $# >= 4 )) || usage; shift 2; run "$@" ;;
    stop) (( $# == 2 )) || usage; stop ;;
    *) usage ;;
esac
