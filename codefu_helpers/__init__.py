"""codefu_helpers: the package under the CodeFu GRPO tutorial notebooks.

Modules: `data` (CodeContests rows -> verl parquet), `sandbox` (isolated judge), `reward` (verl-compatible
compute_score), `grpo` (advantages and losses), `trainer`, `evaluate`, `launch` (SageMaker).
The notebooks in `notebooks/` show these pieces; this package does the work.
"""

__version__ = "0.1.0"
