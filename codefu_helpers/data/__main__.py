"""`python -m codefu_helpers.data`: the data commands.

    python -m codefu_helpers.data --dataset data/sample --output-dir data/processed --language python
    python -m codefu_helpers.data prepare --dataset data/sample --output-dir data/processed    # the same
    python -m codefu_helpers.data filter-by-pass-rate --dataset data/processed/train.parquet --model M --n 8 \
        --keep 0.1 0.9 --output-dir data/by_pass_rate

`prepare` (the default) filters, tiers and splits raw CodeContests rows (`codefu_helpers.data.prepare_dataset`);
`filter-by-pass-rate` samples a model on a split and keeps the problems it solves neither always nor never
(`codefu_helpers.pass_rate`). This front end sits above both: the data module itself imports nothing that samples.
"""

from __future__ import annotations

import sys

COMMANDS = ("prepare", "filter-by-pass-rate")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv.pop(0) if argv and argv[0] in COMMANDS else "prepare"
    if command == "filter-by-pass-rate":
        from ..pass_rate import main as filter_main

        return filter_main(argv) or 0
    from . import main as prepare_main

    prepare_main(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
