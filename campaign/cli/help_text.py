"""The examples and descriptions `campaign --help` prints: prose the grammar
(parser.py) shows, kept apart so the grammar reads as options only.

tests/docs/test_readme_examples.py parses and plans every example here.
"""

EXAMPLES = """\
examples:
  campaign submit experiment=smoke                      run the smoke campaign on this machine
  campaign submit cluster=delta cluster.account=abcd-delta-cpu experiment=forward_scaling --dry-run
                                                        batch scripts and SU estimate; nothing submitted
  campaign submit cluster=localslurm experiment=smoke --wait           the test Slurm (source its env.sh first)
  campaign status smoke-local --watch                   live progress until every job finished
  campaign jobs --failed --format json                  failed jobs (every failed state) as JSON
  campaign show JOB_ID                                  command, environment, lineage, stderr tail of one job
  campaign rerun smoke-local --failed --time-factor 2   resubmit failed runs with twice the walltime
  campaign report --campaign smoke-local --out report/  Markdown + HTML report
  campaign compare BASE NEW --fail-on slower            exit 3 when NEW is slower beyond the threshold

shell completion (commands, options, experiment=/cluster= names, campaigns, job IDs):
  bash: echo 'eval "$(campaign completion bash)"' >> ~/.bashrc
  zsh:  echo 'eval "$(campaign completion zsh)"' >> ~/.zshrc
"""
SUBMIT_EXAMPLES = """\
examples:
  campaign submit experiment=smoke experiment.repeats=5     this machine (campaign smoke-local)
  campaign submit cluster=localslurm experiment=smoke --wait  the test Slurm (source /tmp/campaign-slurm/env.sh)
  campaign submit experiment=smoke 'experiment.sweeps.0.threads=1,2' --dry-run    a sweep axis, scripts only
  campaign submit cluster=anvil,delta experiment=smoke cluster.account=abc123 --dry-run   two campaigns
  campaign submit --info                                    the config folders and the names they offer
  campaign submit experiment=smoke --cfg job                the composed config as YAML
"""
ADVISE = """\
advice from the wave model and the ledger's measurements:
  shape    check a model's hidden size, heads and vocabulary against a GPU (wave quantization,
           tensor-core alignment) and propose better shapes; measured GEMM times are used when
           the ledger has them
  threads  the recommended thread count per problem-size range on one partition, from the
           ledger's thread sweeps, and what running on all cores costs

examples:
  campaign advise shape --h 2560 --a 32 --vocab 50257 --gpu h200
  campaign advise threads --cluster delta --partition cpu --kernel attention_forward
"""
