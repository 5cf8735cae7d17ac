"""Benchmark runner: problems, methods, the BO loop, results and backends."""
