"""Compose time, pure: an experiment's config becomes runs, and each run what it
asks of a partition (cores, memory, ranks, GPUs, environment, profiler, cost in
SUs) and the identity that says whether it was measured before. No I/O against
a scheduler or the ledger, so every rule here is tested without either."""
