"""Benchmark suites of :mod:`lyra_solver.bench.harness`, one module per family (registered in ``SUITES``)."""
