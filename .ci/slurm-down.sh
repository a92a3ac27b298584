#!/bin/bash
# slurm-down.sh -- stop the test cluster that .ci/slurm-up.sh started.
#
# Why by recorded PID: other Slurm/munge/MariaDB processes may run on the same
# machine (a developer's own); this script kills only the daemons slurm-up.sh
# started (their PIDs are in $LAB/run/started/) and checks that each PID still
# runs the expected program. Leftover jobs are cancelled first so no
# slurmstepd outlives slurmd. The state (DB, job IDs) is kept for a fast
# restart unless --purge is given, which also deletes $LAB.
set -euo pipefail

LAB=${CAMPAIGN_SLURM_LAB:-/tmp/campaign-slurm}
export SLURM_CONF=$LAB/etc/slurm.conf
export PATH=$PATH:/usr/sbin:/sbin
PURGE=0
case "${1:-}" in
  --purge) PURGE=1 ;;
  "") ;;
  *) echo "usage: $0 [--purge]" >&2; exit 2 ;;
esac
log() { echo "slurm-down: $*"; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
T_ALL=$(now_ms)

# 1. cancel jobs still queued/running on this private cluster
if [ -f "$SLURM_CONF" ] && timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP'; then
  mapfile -t ids < <(timeout 10 squeue -h -o %A 2>/dev/null | sort -u)
  if [ ${#ids[@]} -gt 0 ]; then
    log "cancelling jobs: ${ids[*]}"
    timeout 30 scancel "${ids[@]}" || log "scancel failed (continuing)"
    end=$(( $(date +%s) + 30 ))
    while [ -n "$(timeout 5 squeue -h -o %A 2>/dev/null || true)" ] && [ "$(date +%s)" -lt "$end" ]; do
      sleep 0.2
    done
  fi
fi

# 2. stop daemons in reverse start order, only the PIDs slurm-up.sh recorded
alive() { [ -d "/proc/$1" ] && ! grep -qs '^State:.*Z' "/proc/$1/status"; }
stop_pid() {  # stop_pid NAME : NAME is also the program the PID must run
  local f="$LAB/run/started/$1.pid" pid end
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if alive "$pid" && grep -qa "${1%%@*}" "/proc/$pid/cmdline"; then  # slurmd@n1: program slurmd
    kill -TERM "$pid"
    end=$(( $(date +%s) + 10 ))
    while alive "$pid" && [ "$(date +%s)" -lt "$end" ]; do sleep 0.1; done
    if alive "$pid"; then
      log "$1 ($pid) ignored SIGTERM for 10 s, sending SIGKILL"
      kill -KILL "$pid" || true
    fi
    log "stopped $1 (pid $pid)"
  else
    log "$1: pid $pid not running (or not $1), nothing to do"
  fi
  rm -f "$f"
}
# the second cluster of slurm-second-up.sh (multi-cluster tests), if it was started: its jobs, then its daemons
LAB2=${CAMPAIGN_SLURM_LAB2:-$LAB/second}
if [ -d "$LAB2/run/started" ]; then
  if [ -f "$LAB2/etc/slurm.conf" ] && timeout 5 env SLURM_CONF="$LAB2/etc/slurm.conf" scontrol ping 2>/dev/null | grep -q 'is UP'; then
    mapfile -t ids2 < <(timeout 10 env SLURM_CONF="$LAB2/etc/slurm.conf" squeue -h -o %A 2>/dev/null | sort -u)
    if [ ${#ids2[@]} -gt 0 ]; then
      timeout 30 env SLURM_CONF="$LAB2/etc/slurm.conf" scancel "${ids2[@]}" || log "scancel on the second cluster failed (continuing)"
    fi
  fi
  LAB_SAVED=$LAB; LAB=$LAB2
  stop_pid slurmd
  stop_pid slurmctld
  LAB=$LAB_SAVED
fi
for f in "$LAB"/run/started/slurmd@*.pid; do  # the multi-node partition's slurmd, one per node
  if [ -e "$f" ]; then stop_pid "$(basename "$f" .pid)"; fi
done
stop_pid slurmd
stop_pid slurmctld
stop_pid slurmdbd
stop_pid mariadbd
stop_pid munged

# 3. task/cgroup leaves empty cgroup v1 dirs behind (rmdir only removes empty cgroups)
for d in /sys/fs/cgroup/*/slurm_localhost /sys/fs/cgroup/*/slurm_n[0-9]*; do
  if [ -d "$d" ]; then
    find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    if [ -d "$d" ]; then log "could not remove $d (still in use?)"; else log "removed $d"; fi
  fi
done

if [ "$PURGE" = 1 ] && [ -d "$LAB" ]; then
  rm -rf -- "$LAB"
  log "purged $LAB"
fi
d=$(( $(now_ms) - T_ALL ))
log "done in $((d / 1000)).$(printf '%03d' $((d % 1000))) s"
