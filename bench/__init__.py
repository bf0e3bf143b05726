"""Benchmarks, run by `make bench`: each module's main() returns its figures."""
