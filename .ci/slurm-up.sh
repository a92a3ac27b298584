#!/bin/bash
# slurm-up.sh -- start the single-node Slurm test cluster used by tests/slurm (and the reliability tests).
#
# Why: integration tests must talk to a real slurmctld/slurmd/slurmdbd (sacct
# included), but CI machines have no systemd and the machine has 2 cores. This
# script installs the Debian packages if needed, writes every config under one
# folder and starts the daemons in the foreground mode, detached, recording
# their PIDs so that slurm-down.sh stops exactly those. This script is the
# tested recipe (Debian 12, Slurm 22.05); what the cluster is for is in
# docs/design.md#tests.
#
# Environment:
#   CAMPAIGN_SLURM_LAB      state folder (default /tmp/campaign-slurm)
#   CAMPAIGN_SLURM_CGROUP   auto|1|0: task/cgroup (gives OUT_OF_MEMORY) or task/none
#   CAMPAIGN_SLURM_DB_PORT  MariaDB TCP port on 127.0.0.1 (default 3306)
#   CAMPAIGN_SLURM_PORT_BASE  slurmctld port (default 6817); slurmd takes +1, slurmdbd +2 and the
#       multi-node nodes n1..n4 +23..+26: a second lab (CAMPAIGN_SLURM_LAB elsewhere) runs beside the shared one
#   CAMPAIGN_SLURM_INSTALL  auto (apt-get install what is missing) | always | never
#   CAMPAIGN_SLURM_DB_PASSWORD  password of the DB user `slurm` (default below).
#       It exists only for this throw-away test cluster: the DB listens on
#       127.0.0.1 only and holds nothing but test accounting. Never reuse it.
# After it: `source $LAB/env.sh` (exports SLURM_CONF) before any Slurm command.
# Idempotent: when the cluster in $LAB is already up it says so and exits 0.
# Must run as root (it starts munged/slurmd as root, like the recipe).
set -euo pipefail

LAB=${CAMPAIGN_SLURM_LAB:-/tmp/campaign-slurm}
CGROUP=${CAMPAIGN_SLURM_CGROUP:-auto}
DB_PORT=${CAMPAIGN_SLURM_DB_PORT:-3306}
DB_PASSWORD=${CAMPAIGN_SLURM_DB_PASSWORD:-campaign-test-only}
INSTALL=${CAMPAIGN_SLURM_INSTALL:-auto}
CLUSTER=localslurm
NODE=localhost
PORT_BASE=${CAMPAIGN_SLURM_PORT_BASE:-6817}
CTLD_PORT=$PORT_BASE
SLURMD_PORT=$((PORT_BASE + 1))
DBD_PORT=$((PORT_BASE + 2))
# Several nodes on this one machine (one slurmd each, own name and port) for multi-node jobs:
# partition `multi` (docs/design.md#tests). The node `localhost` and its partitions stay as they were.
MULTI_NODES=(n1 n2 n3 n4)
MULTI_PORT0=$((PORT_BASE + 23))
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export SLURM_CONF=$LAB/etc/slurm.conf

SLURM_LIB_NAME=slurm-up
LAB_DIR=$LAB
# shellcheck source=slurm-lib.sh
source "$HERE/slurm-lib.sh"

ctld_up()   { timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP'; }
node_state() { timeout 5 sinfo -h -n "$NODE" -o %T 2>/dev/null | head -1; }
node_idle() { [ "$(node_state)" = idle ]; }
# (planned: backfill holds the node for a pending job; a busy test cluster shows it often)
node_usable() { case "$(node_state)" in idle|mixed|allocated|completing|planned) return 0 ;; *) return 1 ;; esac; }
# every node of partition multi answers (idle, or running jobs); none down or unknown
multi_usable() {
  local states
  states=$(timeout 5 sinfo -h -p multi -N -o %T 2>/dev/null | sort -u) || return 1
  [ "$(timeout 5 sinfo -h -p multi -N -o %N 2>/dev/null | sort -u | wc -l)" = "${#MULTI_NODES[@]}" ] || return 1
  ! grep -qvE '^(idle|mixed|allocated|completing|planned)$' <<<"$states"
}
dbd_up()    { timeout 5 sacctmgr -n show cluster >/dev/null 2>&1; }
sacct_ok()  { timeout 10 sacct -n -X -j 1 -o JobID >/dev/null 2>&1; }
munge_ok()  { timeout 2 munge -n </dev/null >/dev/null 2>&1; }
db_ok()     { timeout 2 mariadb-admin --defaults-file="$LAB/etc/my.cnf" ping >/dev/null 2>&1; }
port_busy() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }
# any command that fails under set -e says where, so a failed start is never a silent exit 1
trap 'echo "slurm-up: ERROR: line $LINENO failed (exit $?): $BASH_COMMAND" >&2' ERR
T_ALL=$(now_ms)
[ "$(id -u)" = 0 ] || die "must run as root (munged, slurmd and the cgroup setup need it)"

# ---------------- already up? ----------------
recorded_alive() {  # every daemon slurm-up recorded still runs (slurmctld keeps a dead slurmd "idle" for minutes)
  local f name
  for f in "$LAB"/run/started/*.pid; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .pid)
    our_pid_alive "$name" || return 1
  done
}
# Bumped whenever the generated configuration changes (MaxJobCount for the scale benchmark, ...):
# a cluster started from an older one is restarted, not reused.
CONF_REV=4
conf_current() { [ "$(cat "$LAB/etc/conf.rev" 2>/dev/null)" = "$CONF_REV" ]; }
alive_current() { [ -f "$SLURM_CONF" ] && conf_current && recorded_alive && ctld_up; }
# A cluster whose daemons all run is never restarted on one look: a node in passing state or a
# sacctmgr slow under load would otherwise restart it under the jobs of a running test suite.
for try in 1 2 3 4 5 6; do
  if alive_current && node_usable && multi_usable && dbd_up; then
    log "cluster in $LAB is already up (node $(node_state)); nothing to do ($(since "$T_ALL") s)"
    log "export SLURM_CONF=$SLURM_CONF   (or: source $LAB/env.sh)"
    exit 0
  fi
  alive_current || break
  sleep 5
done
# half up (some daemons of an earlier run alive) or started from an older configuration:
# stop them all, then start cleanly
for name in munged mariadbd slurmdbd slurmctld slurmd "${MULTI_NODES[@]/#/slurmd@}"; do
  if our_pid_alive "$name"; then
    log "cluster in $LAB is only partly up or from an older configuration; restarting it"
    bash "$HERE/slurm-down.sh"
    break
  fi
done

# ---------------- ports must be free (checked before anything is written) ----------------
if port_busy "$DB_PORT"; then
  die "port 127.0.0.1:$DB_PORT is taken by a database this script did not start; stop it or set CAMPAIGN_SLURM_DB_PORT"
fi
for p in "$CTLD_PORT" "$SLURMD_PORT" "$DBD_PORT" $(seq "$MULTI_PORT0" $((MULTI_PORT0 + ${#MULTI_NODES[@]} - 1))); do
  if port_busy "$p"; then die "Slurm port $p is taken by a daemon this script did not start (another Slurm?); stop it first"; fi
done

# ---------------- packages ----------------
need=()
command -v sbatch >/dev/null 2>&1 || need+=(slurm-wlm)
command -v munged >/dev/null 2>&1 || [ -x /usr/sbin/munged ] || need+=(munge)
command -v slurmdbd >/dev/null 2>&1 || [ -x /usr/sbin/slurmdbd ] || need+=(slurmdbd)
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need+=(mariadb-server)
if [ "$INSTALL" = always ]; then need=(slurm-wlm munge slurmdbd mariadb-server); fi
if [ ${#need[@]} -gt 0 ] && [ "$INSTALL" = never ]; then
  die "missing Debian packages: ${need[*]} (CAMPAIGN_SLURM_INSTALL=never)"
fi
if [ ${#need[@]} -gt 0 ]; then
  T=$(now_ms)
  log "installing ${need[*]} (apt)"
  # Without systemd the postinst scripts would start mariadb/munge/slurm through
  # init.d; a temporary policy-rc.d (exit 101) stops that. An existing one is kept.
  made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d; made_policy=1
    trap 'if [ "$made_policy" = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi' EXIT
  fi
  export DEBIAN_FRONTEND=noninteractive
  timeout 300 apt-get -o DPkg::Lock::Timeout=120 update
  timeout 900 apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends \
    slurm-wlm munge slurmdbd mariadb-server
  if [ "$made_policy" = 1 ]; then rm -f /usr/sbin/policy-rc.d; made_policy=0; fi
  log "packages installed in $(since "$T") s"
fi
export PATH=$PATH:/usr/sbin:/sbin

# ---------------- cgroup probe ----------------
if [ "$CGROUP" = auto ]; then
  CGROUP=0
  probe=/sys/fs/cgroup/memory/campaign_probe_$$
  if grep -qs ' /sys/fs/cgroup/memory cgroup ' /proc/mounts && mkdir "$probe" 2>/dev/null; then
    rmdir "$probe" && CGROUP=1
  fi
fi

mkdir -p "$LAB"/{etc,logs,run/started,state/ctld,state/d/$NODE,jobs} "$LAB/tmp/$NODE" "${MULTI_NODES[@]/#/$LAB/tmp/}" "$LAB"/munge/{run,log,lib}
chmod 755 "$LAB" "$LAB/munge" "$LAB/munge/run"; chmod 700 "$LAB/munge/log" "$LAB/munge/lib"
# munged needs its socket dir traversable by all (0755); nothing creates /run/munge without systemd.
# The default socket is used because sacctmgr ignores AuthInfo=socket= (recipe pitfall P2).
mkdir -p /run/munge && chmod 755 /run/munge

# ---------------- configs ----------------
if [ "$CGROUP" = 1 ]; then TASK=task/cgroup; MEMKILL="#JobAcctGatherParams=OverMemoryKill"
else TASK=task/none; MEMKILL="JobAcctGatherParams=OverMemoryKill"; fi
cat > "$LAB/etc/slurm.conf" <<EOF
# single-node test cluster for campaign (Slurm 22.05, Debian 12). Generated by .ci/slurm-up.sh
ClusterName=$CLUSTER
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
# cred_expire (default 120 s) is also the delay before a requeued job may start again
AuthInfo=cred_expire=30
JobAcctGatherFrequency=task=2
$MEMKILL
# the scale benchmark holds 100,000-run campaigns, several of them within MinJobAge (each array task
# counts towards MaxJobCount even while its array is one pending record, cancelled ones until
# MinJobAge has passed); MaxArraySize stays at Slurm's default (tests rely on chunking)
MaxJobCount=1000000
MaxArraySize=1001
# a node's own temporary folder: PMIx puts each step's client folder (spmix_appdir_<uid>_<job>.<step>)
# under TmpFS, and ranks of one step on two nodes of this one machine would collide in /tmp
TmpFS=$LAB/tmp/%n
# srun steps start no PMIx server unless asked: campaign launches MPI programs with srun --mpi=pmix
MpiDefault=none
$(slurm_conf_common "$LAB" "$TASK" "$DBD_PORT")
# multi-node jobs: four small nodes of 2 CPUs each on the same 2 cores (overcommitted on purpose), each
# its own loopback address (127.0.0.0/8 all reaches this machine). Declared before localhost: while
# a cluster's only node is named localhost, Slurm resolves every node name to it and refuses the next
# one as "Duplicated NodeHostName".
$(for i in "${!MULTI_NODES[@]}"; do
  echo "NodeName=${MULTI_NODES[$i]} NodeAddr=127.0.0.$((11 + i)) Port=$((MULTI_PORT0 + i)) Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=4000 State=UNKNOWN"
done)
NodeName=$NODE NodeAddr=127.0.0.1 Sockets=8 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=512000 State=UNKNOWN
PartitionName=cpu   Nodes=$NODE Default=YES MaxTime=60 DefaultTime=10 State=UP
# gpu is only a label: the node has no GPUs (no Gres)
PartitionName=gpu   Nodes=$NODE MaxTime=30 DefaultTime=10 State=UP
PartitionName=short Nodes=$NODE MaxTime=1  DefaultTime=1  State=UP
PartitionName=multi Nodes=$(IFS=,; echo "${MULTI_NODES[*]}") MaxNodes=${#MULTI_NODES[@]} MaxTime=30 DefaultTime=10 State=UP
EOF
echo "$CONF_REV" > "$LAB/etc/conf.rev"
cat > "$LAB/etc/cgroup.conf" <<'EOF'
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
CgroupAutomount=no
ConstrainRAMSpace=yes
ConstrainSwapSpace=no
ConstrainCores=no
ConstrainDevices=no
EOF
( umask 077
cat > "$LAB/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
LogFile=$LAB/logs/slurmdbd.log
PidFile=$LAB/run/slurmdbd.pid
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
# test-cluster-only password (see the header of .ci/slurm-up.sh)
StoragePass=$DB_PASSWORD
StorageLoc=slurm_acct_db
EOF
)
chmod 600 "$LAB/etc/slurmdbd.conf"   # slurmdbd refuses a group/world-readable slurmdbd.conf (P5)
cat > "$LAB/etc/my.cnf" <<EOF
[mysqld]
user=root
datadir=$LAB/mysql/data
socket=$LAB/mysql/run/mysqld.sock
pid-file=$LAB/mysql/run/mysqld.pid
log-error=$LAB/logs/mariadb.err
bind-address=127.0.0.1
port=$DB_PORT
skip-log-bin
innodb_buffer_pool_size=128M
innodb_log_file_size=64M
innodb_lock_wait_timeout=900
[client]
socket=$LAB/mysql/run/mysqld.sock
EOF
cat > "$LAB/env.sh" <<EOF
# source this file before running Slurm commands against the campaign test cluster
export CAMPAIGN_SLURM_LAB=$LAB
export SLURM_CONF=$SLURM_CONF
EOF
log "configs written in $LAB/etc (task plugin: $TASK)"

# ---------------- munge ----------------
T=$(now_ms)
if munge_ok; then
  # a munged we did not start already serves the default socket: use it, never stop it
  log "a munged already answers on /run/munge; using it"
else
  [ -f "$LAB/munge/munge.key" ] || mungekey --create --keyfile="$LAB/munge/munge.key"
  start_bg munged /usr/sbin/munged -F --key-file="$LAB/munge/munge.key" \
    --log-file="$LAB/munge/log/munged.log" --pid-file="$LAB/munge/run/munged.pid" \
    --seed-file="$LAB/munge/lib/munged.seed"
  wait_for 15 munge_ok || { tail_log "$LAB/munge/log/munged.log"; die "munged did not start"; }
fi
log "munged ready in $(since "$T") s"

# ---------------- mariadb + slurmdbd ----------------
T=$(now_ms)
mkdir -p "$LAB/mysql/data" "$LAB/mysql/run"
if [ ! -d "$LAB/mysql/data/mysql" ]; then
  timeout 120 mariadb-install-db --defaults-file="$LAB/etc/my.cnf" --auth-root-authentication-method=socket \
    --skip-test-db > "$LAB/logs/mariadb-install-db.log" 2>&1 \
    || { tail_log "$LAB/logs/mariadb-install-db.log"; die "mariadb-install-db failed"; }
  log "mariadb-install-db done in $(since "$T") s"
fi
T=$(now_ms)
start_bg mariadbd /usr/sbin/mariadbd --defaults-file="$LAB/etc/my.cnf"
wait_for 60 db_ok || { tail_log "$LAB/logs/mariadb.err"; die "mariadbd did not start"; }
timeout 30 mariadb --defaults-file="$LAB/etc/my.cnf" -e "
  CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASSWORD';
  CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASSWORD';
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
log "mariadbd ready in $(since "$T") s"
T=$(now_ms)
start_bg slurmdbd /usr/sbin/slurmdbd -D
wait_for 60 dbd_up || { tail_log "$LAB/logs/slurmdbd.log"; die "slurmdbd did not answer sacctmgr"; }
register_cluster "$CLUSTER"
log "slurmdbd ready in $(since "$T") s"

# ---------------- slurmctld + slurmd ----------------
T_CTLD=$(now_ms)
start_bg slurmctld /usr/sbin/slurmctld -D
wait_for 60 ctld_up || { tail_log "$LAB/logs/slurmctld.log"; die "slurmctld did not answer ping"; }
log "slurmctld answering ping after $(since "$T_CTLD") s"
start_bg slurmd /usr/sbin/slurmd -D -N "$NODE"
wait_for 60 node_idle || { tail_log "$LAB/logs/slurmd-$NODE.log"; die "node $NODE did not become idle (state: $(node_state))"; }
log "node idle after $(since "$T_CTLD") s (from slurmctld start)"
for n in "${MULTI_NODES[@]}"; do
  mkdir -p "$LAB/state/d/$n"
  start_bg "slurmd@$n" /usr/sbin/slurmd -D -N "$n"
done
wait_for 60 multi_usable || { tail_log "$LAB/logs/slurmd-${MULTI_NODES[0]}.log"; die "partition multi: not every node up ($(sinfo -h -p multi -N -o '%N=%T' | tr '\n' ' '))"; }
log "nodes ${MULTI_NODES[*]} (partition multi) up after $(since "$T_CTLD") s"

# ---------------- smoke test ----------------
jid=$(cd "$LAB/jobs" && timeout 30 sbatch --parsable -o /dev/null -J campaign-smoke --wrap true)
job_state() { timeout 5 scontrol show job "$jid" -o 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
job_done() { [ "$(job_state)" = COMPLETED ]; }
wait_for 60 job_done || { tail_log "$LAB/logs/slurmctld.log"; die "smoke job $jid did not reach COMPLETED (state: $(job_state))"; }
log "smoke job $jid COMPLETED $(since "$T_CTLD") s after slurmctld start"
wait_for 30 sacct_ok || die "sacct does not answer"
log "cluster up: total $(since "$T_ALL") s"
log "export SLURM_CONF=$SLURM_CONF   (or: source $LAB/env.sh)"
