"""Results, from a job's output to the frames the analysis takes: read strictly
(reader, expected, partial), stored as files the ledger points to (store),
read back (scan, export, frames), and the flags a timing carries (overlap,
shared nodes) and the scope and cost models a report applies."""
