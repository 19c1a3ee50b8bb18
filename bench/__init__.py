"""Benchmarks of the chatgate jobs against the baselines (`make bench`)."""
