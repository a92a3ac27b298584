"""The real-Slurm fixture of tests/integration, shared with the fault tests here."""

from tests.integration.conftest import SlurmCluster, slurm_cluster  # noqa: F401
