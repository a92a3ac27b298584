# slurm-lib.sh -- what slurm-up.sh and slurm-second-up.sh share: polling, logging, the daemons they
# start and record by PID, registering a cluster in slurmdbd, and the slurm.conf lines both clusters
# have in common. Sourced, never run. The caller sets, before sourcing:
#   SLURM_LIB_NAME  the prefix of every message (the script's name)
#   LAB_DIR         the folder whose run/started/, logs/ hold the PIDs and outputs of its daemons

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
since() { local d=$(( $(now_ms) - $1 )); printf '%d.%03d' $((d / 1000)) $((d % 1000)); }
log() { echo "$SLURM_LIB_NAME: $*"; }
die() { echo "$SLURM_LIB_NAME: ERROR: $*" >&2; exit 1; }
wait_for() {  # wait_for SECONDS CMD... : poll CMD every 0.1 s until it succeeds or the deadline passes
  local end=$(( $(date +%s) + $1 )); shift
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$end" ]; then echo "$SLURM_LIB_NAME: TIMEOUT waiting for: $*" >&2; return 1; fi
    sleep 0.1
  done
}
tail_log() { [ -f "$1" ] && { echo "--- last lines of $1:" >&2; tail -n 20 "$1" >&2; }; return 0; }
our_pid_alive() {  # our_pid_alive NAME : the PID recorded for NAME still runs that program (not a zombie)
  # NAME is the program, or PROGRAM@NODE for one of several slurmd of one cluster (slurmd@n1)
  local f="$LAB_DIR/run/started/$1.pid" pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [ -d "/proc/$pid" ] && grep -qa "${1%%@*}" "/proc/$pid/cmdline" && ! grep -qs '^State:.*Z' "/proc/$pid/status"
}
start_bg() {  # start_bg NAME CMD... : daemon in foreground mode, detached; its PID -> run/started/NAME.pid
  local name=$1; shift
  setsid nohup "$@" > "$LAB_DIR/logs/$name.stdout" 2>&1 < /dev/null &
  echo $! > "$LAB_DIR/run/started/$name.pid"
  log "started $name pid $!"
}
register_cluster() {  # register_cluster NAME : in the slurmdbd of $SLURM_CONF, whether or not it is there
  # `sacctmgr add` of a cluster that exists exits 1 with the reason on stdout only, and a listing cut
  # short (slurmdbd busy, a pipe closed early) must not read as "absent": the answer is read, not
  # only the exit status, and any other failure is said.
  local added
  if timeout 20 sacctmgr -n -P show cluster format=cluster 2>/dev/null | grep -qxF "$1"; then return 0; fi
  added=$(timeout 30 sacctmgr -i add cluster "$1" 2>&1) || grep -q 'already exists' <<<"$added" \
    || die "sacctmgr add cluster $1 failed: $(tr '\n' ' ' <<<"$added")"
}
slurm_conf_common() {  # slurm_conf_common DIR TASK_PLUGIN [DBD_PORT] : lines both test clusters share (state under DIR)
  # %n: each slurmd of a cluster (several nodes on this one machine) has its own spool, PID and log file
  cat <<EOF
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$1/state/ctld
SlurmdSpoolDir=$1/state/d/%n
SlurmctldPidFile=$1/run/slurmctld.pid
SlurmdPidFile=$1/run/slurmd-%n.pid
SlurmctldLogFile=$1/logs/slurmctld.log
SlurmdLogFile=$1/logs/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=$2
JobAcctGatherType=jobacct_gather/linux
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_interval=10,bf_interval=10
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# without it a job with no --mem takes the whole node's memory (recipe P6)
DefMemPerCPU=1024
# accept a node definition bigger than the real hardware (a 128-CPU node on 2 cores)
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=300
KillWait=5
InactiveLimit=0
Waittime=0
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=${3:-6819}
JobCompType=jobcomp/none
EOF
}
