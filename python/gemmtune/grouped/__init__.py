"""Grouped GEMMs (torch._grouped_mm, the experts of a Mixture-of-Experts layer) raced in a torch
process: ``python3 -m gemmtune.grouped SHAPES --lib libgemmtune_grouped.so --db OUT.db`` times
torch's own path for each grouped key of a gemmtune shapes file against gemmtune's grouped kernel
instances and writes a DB row for each key an instance wins. ``gemmtune tune`` runs it for the
grouped keys of its shapes file (the baseline is torch's function: only a torch process runs it).

rows.py is the torch-free part (which keys are tunable, the rows' cells, the DB writer);
harness.py the ctypes surface of the kernels' library and the cold CUDA-graph timing; race.py
the race. Importing this package imports neither torch nor the library.
"""
