"""The job side: what runs on the compute node. Imports only the standard
library, so a node needs nothing of campaign but this package (docs/design.md)."""
