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


# the lessons whose outputs are their teaching: each keeps them (refreshed with tools/render_notebooks.py --execute)
KEEPS_OUTPUTS = ['00_core', '01_objectives', '02_buffer', '03_samplers', '05_models', '06_tasks', '06a_metrics', '06b_gsm8k', '06c_tldr',
                 '06d_answers', '06e_weights', '06f_generation', '06g_evaluation', '06h_probe', '06i_rewards', '06j_hf_metrics', '06k_data',
                 '07_searchers', '07a_workers', '07b_vllm',
                 '07c_redteam', '07d_ray', '08_trainer', '09_config', '09a_checkpoints', '09b_records', '09c_runtime', '09d_parts',
                 '09e_pool', '09g_build', '10_loop', '11_cli', '12_viz', 'index', 'tutorials/bring_your_own_task', 'tutorials/diversity',
                 'tutorials/from_trl', 'tutorials/objectives_compared', 'tutorials/quickstart', 'tutorials/tba_from_scratch', 'tutorials/tour']
# what an output must not hold: this machine's folders, temporary ones, an installed package's path
MACHINE_PATH = re.compile(r'/tmp/|/work/|/home/|/root/|/Users/|site-packages|\btmp[a-z0-9_]{8}\b')


def test_lessons_keep_their_outputs_without_machine_paths():
    "A lesson listed in KEEPS_OUTPUTS that lost its outputs (a cleared notebook committed) fails, and so does any notebook's output naming a machine's folder"
    import json
    lost, leaks = [], []
    for p in ALL:
        name = p.relative_to(ROOT / 'nbs').with_suffix('').as_posix()
        outputs = [o for c in json.loads(p.read_text())['cells'] for o in c.get('outputs', [])]
        if name in KEEPS_OUTPUTS and not outputs: lost.append(name)
        leaks += [f"{name}: {m.group()!r}" for m in MACHINE_PATH.finditer(json.dumps(outputs))]
    assert not lost, f"lessons without their outputs (python tools/render_notebooks.py --execute nbs/NAME.ipynb): {lost}"
    assert not leaks, f"outputs holding a machine's path (print a relative path or a name instead): {leaks[:10]}"
    assert set(KEEPS_OUTPUTS) <= {p.relative_to(ROOT / 'nbs').with_suffix('').as_posix() for p in ALL}, 'KEEPS_OUTPUTS names a notebook that is not in nbs/'
