"""Where the suite's files live and the one format of its results files."""
