#!/usr/bin/env bash
# A single-node Slurm cluster on this Debian machine, for trying the Slurm recipe (and for its test):
#   sudo deploy/slurm/single_node.sh start [DIR]   # installs slurm-wlm and munge if missing; prints SLURM_CONF
#   export SLURM_CONF=DIR/slurm.conf               # then sinfo, sbatch, squeue, scancel and launch.py use it
#   sudo deploy/slurm/single_node.sh stop [DIR]    # cancels its jobs, stops the daemons, removes DIR
# DIR (default /tmp/ordercube-slurm) holds everything: slurm.conf, a munge key and socket, the daemons' state,
# spool, logs and pid files; nothing under /etc is written. One node (this machine, its CPUs and memory as
# `slurmd -C` reports them), one partition `debug`. Runs as root: munged, slurmctld and slurmd all as root, jobs
# as whoever submits them. ORDERCUBE_SLURM_TIMEOUT (seconds, default 60) bounds the wait for the node to be idle;
# ORDERCUBE_SLURM_PORT (default 6817) is slurmctld's port, slurmd takes the next one.
set -euo pipefail

usage() { echo "usage: $0 start|stop [DIR]" >&2; exit 2; }
action=${1:-}
dir=${2:-/tmp/ordercube-slurm}
timeout=${ORDERCUBE_SLURM_TIMEOUT:-60}
port=${ORDERCUBE_SLURM_PORT:-6817}
[[ $timeout =~ ^[0-9]+$ ]] || { echo "ORDERCUBE_SLURM_TIMEOUT=$timeout: give whole seconds, e.g. 60" >&2; exit 2; }
[[ $port =~ ^[0-9]+$ ]] && (( port > 1023 && port < 65535 )) \
    || { echo "ORDERCUBE_SLURM_PORT=$port: give a free port from 1024 to 65534, e.g. 6817" >&2; exit 2; }

install_if_missing() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null && return 0
    echo "installing slurm-wlm and munge (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    { apt-get install -y -q slurm-wlm munge || { apt-get update -q && apt-get install -y -q slurm-wlm munge; }; } \
        >"$dir/apt.log" 2>&1 || { echo "apt-get could not install slurm-wlm munge: see $dir/apt.log" >&2; exit 3; }
}

write_conf() {
    # `slurmd -C` prints this machine's node line: NodeName=vm CPUs=2 ... RealMemory=24105 (and an UpTime line).
    local node name
    node=$(slurmd -C | grep '^NodeName=')
    name=${node%% *}; name=${name#NodeName=}
    cat >"$dir/slurm.conf" <<EOF
ClusterName=ordercube
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobs.txt
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MinJobAge=600
KillWait=10
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$name Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
    (( EUID == 0 )) || { echo "$0 start runs as root (munged, slurmctld and slurmd as root)" >&2; exit 2; }
    [[ -e $dir/run/slurmctld.pid ]] && { echo "a cluster is already up in $dir: $0 stop $dir first" >&2; exit 2; }
    mkdir -p "$dir"/{state,spool,run,log,munge}
    chmod 700 "$dir/munge"
    install_if_missing
    write_conf
    export SLURM_CONF=$dir/slurm.conf
    [[ -s $dir/munge/munge.key ]] || { dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
                                       chmod 400 "$dir/munge/munge.key"; }
    munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
        --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed"
    slurmctld -f "$SLURM_CONF"
    slurmd -f "$SLURM_CONF"
    local waited=0 state=""
    while (( waited < timeout )); do
        state=$(sinfo -h -N -o %t 2>/dev/null | head -n 1)
        [[ $state == idle ]] && break
        sleep 1; waited=$((waited + 1))
    done
    if [[ $state != idle ]]; then
        echo "the node is not idle after ${timeout} s (sinfo: ${state:-no answer}); logs in $dir/log" >&2
        tail -n 5 "$dir"/log/slurm*.log >&2 || true
        stop_daemons
        exit 4
    fi
    sinfo -N -o "%N %t %c %m %P"
    echo "up in ${waited} s: export SLURM_CONF=$SLURM_CONF"
}

stop_daemons() {
    export SLURM_CONF=$dir/slurm.conf
    # Cancel every job first: slurmd killed with jobs running would leave their processes behind.
    if [[ -e $dir/run/slurmctld.pid ]]; then
        local jobs
        jobs=$(squeue -h -o %A 2>/dev/null || true)
        if [[ -n $jobs ]]; then
            # shellcheck disable=SC2086  # one argument per job id
            scancel $jobs 2>/dev/null || true
            for _ in $(seq 30); do [[ -z $(squeue -h -o %A 2>/dev/null || true) ]] && break; sleep 1; done
        fi
    fi
    local daemon pid
    for daemon in slurmd slurmctld munged; do
        [[ -s $dir/run/$daemon.pid ]] || continue
        pid=$(<"$dir/run/$daemon.pid")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$dir/run/$daemon.pid"
    done
}

stop() {
    [[ -e $dir/slurm.conf ]] || { echo "no cluster in $dir (no slurm.conf)" >&2; exit 0; }
    stop_daemons
    rm -rf "$dir"
    echo "stopped; $dir removed"
}

case $action in
    start) start ;;
    stop) stop ;;
    *) usage ;;
esac
