"Every notebook in nbs/ is a test: its cells run top to bottom, except those flagged with tst_flags (slow, gpu, vllm)."
from pathlib import Path

import pytest
from nbdev.config import get_config
from nbdev.test import test_nb as run_nb  # aliased so pytest does not collect it

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p for p in (ROOT / 'nbs').rglob('*.ipynb') if '.ipynb_checkpoints' not in p.parts)


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 5, NOTEBOOKS


@pytest.mark.parametrize('nb', NOTEBOOKS, ids=lambda p: p.relative_to(ROOT / 'nbs').as_posix())
def test_notebook(nb, request):
    skip = get_config(ROOT).tst_flags.split()
    force = request.config.getoption('--flags').split()
    ok, seconds = run_nb(nb, skip_flags=skip, force_flags=force, basepath=ROOT)
    assert ok, f"{nb.name} failed after {seconds:.1f}s: its traceback is printed above"
