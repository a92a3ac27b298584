"""Result rows: read strictly (reader), stored (store), exported (export)."""
