"""What every room uses and nothing in it knows a campaign: the one clock, the
error classes the CLI maps to exit codes, job states, process ownership, and
the garbage-collector pause of the large loops."""
