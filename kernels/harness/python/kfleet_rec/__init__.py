"""kfleet's recorder for Python kernels (kernels/harness/PYTHON.md).

The parts that need neither torch nor a GPU (the launch-list writer, the refusals, the plan and
device-code file readers) import without torch; `cuda` and `runner` import torch/triton lazily,
inside the functions that need them, so CI can test everything else with a bare python3.
"""
