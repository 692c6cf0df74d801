"""The exercise notebooks are not lessons: strict nbval must not run them.

They are student stubs whose answer cells raise NotImplementedError until a
learner fills them in. tests/test_exercises.py runs them instead (every graded
cell fails on the stub and passes on the solution).
"""

collect_ignore_glob = ["*.ipynb"]
