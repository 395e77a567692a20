"""Records made from other records: the README's measured table, published numbers transcribed from their sources."""
