"Every notebook in nbs/ is a test: its cells run top to bottom, except those flagged with tst_flags (slow, gpu, vllm)."
import re
from pathlib import Path

import pytest
from nbdev.config import get_config
from nbdev.test import test_nb as run_nb  # aliased so pytest does not collect it

ROOT = Path(__file__).resolve().parents[1]
# executed elsewhere, in a real Jupyter kernel: test_browser.py runs it, exports it to HTML and checks its figures in Chromium
ELSEWHERE = {'tutorials/objectives_compared.ipynb'}
ALL = sorted(p for p in (ROOT / 'nbs').rglob('*.ipynb') if '.ipynb_checkpoints' not in p.parts)
NOTEBOOKS = [p for p in ALL if p.relative_to(ROOT / 'nbs').as_posix() not in ELSEWHERE]
# notebooks in the slow tier (tests/conftest.py): their lessons train real models, spawn processes or start Ray; a lesson
# builds on the cells before it, so the notebook is marked as a whole rather than split into a fast half and a slow half
SLOW_TIER = {'04_enumerable.ipynb': 'slow', '07a_workers.ipynb': 'process', '07b_vllm.ipynb': 'vllm', '07d_ray.ipynb': 'cluster',
             '09f_ranks.ipynb': 'process', '10_loop.ipynb': 'slow process', '11_cli.ipynb': 'slow', '13_dashboard.ipynb': 'slow',
             'tutorials/bring_your_own_task.ipynb': 'slow process', 'tutorials/diversity.ipynb': 'slow',
             'index.ipynb': 'slow process'}


def tiered(nb: Path):
    return pytest.param(nb, marks=[getattr(pytest.mark, m) for m in SLOW_TIER.get(nb.relative_to(ROOT / 'nbs').as_posix(), '').split()])


def test_every_modules_notebook_is_a_test():
    "The notebook each module of tba_kit/ is exported from is among those run (a module whose lessons never run fails here)"
    sources = {re.search(r'File to edit: \.\./nbs/(\S+)\.ipynb', p.read_text()).group(1) + '.ipynb'
               for p in (ROOT / 'tba_kit').glob('*.py') if not p.name.startswith('_')}
    assert sources <= {p.relative_to(ROOT / 'nbs').as_posix() for p in NOTEBOOKS}, sources


@pytest.mark.parametrize('nb', [tiered(p) for p in NOTEBOOKS], ids=lambda p: p.relative_to(ROOT / 'nbs').as_posix())
def test_notebook(nb, request):
    skip = get_config(ROOT).tst_flags.split()
    force = request.config.getoption('--flags').split()
    ok, seconds = run_nb(nb, skip_flags=skip, force_flags=force, basepath=ROOT)
    assert ok, f"{nb.name} failed after {seconds:.1f}s: its traceback is printed above"


def test_elsewhere_is_covered():
    assert {(ROOT / 'nbs' / p).exists() for p in ELSEWHERE | SLOW_TIER.keys()} == {True}
    assert all(p.split('/')[-1] in (ROOT / 'tests' / 'test_browser.py').read_text() for p in ELSEWHERE)


def test_from_scratch_tutorial_stays_short():
    "The CleanRL-style tutorial promises the whole algorithm in under 200 lines"
    import json
    cells = json.loads((ROOT / 'nbs' / 'tutorials' / 'tba_from_scratch.ipynb').read_text())['cells']
    lines = sum(len(''.join(c['source']).splitlines()) for c in cells)
    assert lines < 200, f'tba_from_scratch.ipynb has {lines} lines'
