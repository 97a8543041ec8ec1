import os

from hypothesis import settings

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# A cold numba cache is compiled in the test process, as before the background warm-up
# (lyra_solver.formulations.mckp._numba.ready): tests time or count the compiled path, and a test session never
# leaves a compiling process behind. The tests of the cold rule remove the variable (test_numba_warm.py).
os.environ.setdefault("LYRA_NUMBA_COLD", "compile")
