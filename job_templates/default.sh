# Job environment rendered into every Slurm batch script before the job step.
# Placeholders ($modules, $stack, $exports) are filled by campaign/planning/environment.py
# with shell-quoted values from the cluster config; comment lines are dropped.
# Copy this file to job_templates/<name>.sh and set cluster.job_template=<name>
# for a site that needs more (e.g. `source /etc/profile.d/modules.sh`).
$modules
$stack
$exports
