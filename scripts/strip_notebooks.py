"""Strip outputs and execution counts from notebooks, in place: `python scripts/strip_notebooks.py NB...`."""

import sys

import nbformat

for path in sys.argv[1:]:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("execution", None)
        cell.metadata.pop("papermill", None)
    nb.metadata.pop("papermill", None)
    nbformat.write(nb, path)
    print(f"stripped {path}")
