"The package imports fast, without optional heavy dependencies; every module is what its notebook exports; the README is generated from nbs/index.ipynb."
import json, re, subprocess, sys, tempfile
from pathlib import Path

import pytest
from nbdev.export import nb_export

ROOT = Path(__file__).resolve().parents[1]
ADAPTERS = {'tba_kit.hf_metrics'}  # modules that are a bridge to one optional package, which imports its own dependencies (evaluate: transformers)
MODULES = sorted(f"tba_kit.{p.stem}" for p in (ROOT / 'tba_kit').glob('*.py') if not p.stem.startswith('_'))


def test_import_has_no_heavy_or_optional_dependencies():
    code = ("import sys, tba_kit, " + ", ".join(m for m in MODULES if m not in ADAPTERS) + "\n"
            "bad = sorted(m for m in ('vllm', 'ray', 'transformers', 'plotly', 'nbdev', 'IPython', 'evaluate', 'datasets') if m in sys.modules)\n"
            "assert not bad, bad\n"
            "print(tba_kit.__version__)")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().count('.') == 2


def test_a_config_is_data():
    "Made and validated, a Config imports no component (objective, sampler, searcher, engine) and not torch: `check_parts` asks the components"
    code = ("import sys\nfrom tba_kit.config import Config\n"
            "c = Config(objective='mymod:Loss', sampler='uniform', engine='vllm', model='m', placement='ray', k=1, lr_schedule='constant')\n"
            "c.replace(steps=3).to_dict()\n"
            "bad = sorted(m for m in sys.modules if m == 'torch' or m.startswith('tba_kit.') and m not in ('tba_kit.config',))\n"
            "assert not bad, bad")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr


def test_every_module_is_its_notebooks_export():
    "Exported afresh into a scratch folder, the notebooks give tba_kit/ line for line (a hand edit or a stale export fails)"
    out = Path(tempfile.mkdtemp()) / 'tba_kit'  # named as the package: imports between modules become relative
    for nb in sorted((ROOT / 'nbs').glob('*.ipynb')): nb_export(nb, lib_path=out)
    where = lambda s: re.sub(r'(File to edit: |# %% )\S*?nbs/', r'\1../nbs/', s)  # the scratch folder's relative path to nbs/
    made = {p.name: where(p.read_text()) for p in out.glob('*.py')}
    assert sorted(made) == sorted(m.removeprefix('tba_kit.') + '.py' for m in MODULES if m != 'tba_kit.__init__'), sorted(made)
    stale = [n for n, s in made.items() if s != (ROOT / 'tba_kit' / n).read_text()]
    assert not stale, f"{stale} differ from their notebooks: run nbdev-export"


def test_readme_is_generated_from_index_notebook():
    out = subprocess.run([sys.executable, 'tools/make_readme.py', '--check'], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_ledger_says_where_and_from_what_code_each_result_ran(tmp_path, monkeypatch):
    "A result that kept its runs' records (named at any depth of its `runs`) is traced to them: commits counted, machines, versions and days named once where they agree; runs recorded before their commit or machine was, and named runs not here, say so; a README marker shows a file's rows"
    monkeypatch.syspath_prepend(str(ROOT / 'tools'))
    import make_readme, make_results
    monkeypatch.setattr(make_results, 'ROOT', tmp_path)
    cpu = {'cpu': 'AMD EPYC', 'cores': 2, 'isa': ['avx2'], 'gpu': None}
    made = lambda c, day: {'commit': c * 40, 'machine': cpu, 'versions': {'torch': '2.13.0'}, 'date': f'2026-11-{day}T10:00'}
    runs = {'a.json': made('a', 27), 'b.json': {**made('b', 29), 'machine': {**cpu, 'gpu': 'NVIDIA H200'}, 'versions': {'torch': '2.14.0'}},
            'old.json': {'cpu_capability': 'AVX512', 'device': 'cpu'}, 'gpu.json': {'device': 'NVIDIA H200'}, 'bare.json': {'device': None}}
    for name, r in runs.items(): (tmp_path / name).write_text(json.dumps(r))
    rec = {**made('c', 30), 'runs': {'tb': [{'on': 'a.json', 'lag': 'b.json'}, ['old.json', 'gone.json', 'log.txt']]}}  # nested; gone.json is not here
    assert make_results.commit_of(rec) == ('aaaaaaa (1 run), bbbbbbb (1 run), not recorded (made before runs recorded their commit; analysed at ccccccc) (1 run)'
                                           '; 1 of the 4 runs it names are not here')
    assert make_results.of_runs(rec, make_results.machine_of) == 'AMD EPYC, 2 cores, avx2 (1 run), AMD EPYC, 2 cores, avx2, NVIDIA H200 (1 run), a CPU (AVX512) (1 run)'
    assert make_results.of_runs(rec, make_results.versions_of) == 'torch 2.13.0, transformers None, TRL None (1 run), torch 2.14.0, transformers None, TRL None (1 run), versions not recorded (1 run)'
    assert make_results.date_of(rec) == '2026-11-27 to 2026-11-29 (1 run not dated)'
    one = {**rec, 'runs': {'tb': ['a.json', 'a.json']}}
    assert (make_results.commit_of(one), make_results.of_runs(one, make_results.machine_of), make_results.date_of(one)) == ('aaaaaaa (2 runs)', 'AMD EPYC, 2 cores, avx2', '2026-11-27')
    assert [make_results.machine_of(runs[n]) for n in ('gpu.json', 'bare.json')] == ['NVIDIA H200', 'machine not recorded']
    none = {**rec, 'runs': 'gone.json'}  # no run kept: the result's own
    assert (make_results.commit_of(none), make_results.of_runs(none, make_results.machine_of), make_results.date_of(none)) == ('ccccccc', 'AMD EPYC, 2 cores, avx2', '2026-11-30')
    monkeypatch.setattr(make_results, 'rows', lambda: [{'file': 'x.json', 'claim': 'gap | at 40', 'value': '-5 points', 'commit': 'ccccccc'},
                                                       {'file': 'x.json', 'claim': 'steps', 'value': '1.2', 'commit': 'ccccccc'}])
    assert make_readme.fill('<!-- ledger: x.json --> ').splitlines() == [
        '| claim | number |', '|---|---|', '| gap \\| at 40 | -5 points |', '| steps | 1.2 |', '', "(The ledger's rows of [x.json](benchmarks/RESULTS.md#xjson); commit ccccccc.)"]
    assert make_readme.fill('<!-- ledger: x.json | | at 40 -->').splitlines() == [  # only the rows whose claim holds the text after the first '|'
        '| claim | number |', '|---|---|', '| gap \\| at 40 | -5 points |', '', "(The ledger's rows of [x.json](benchmarks/RESULTS.md#xjson) whose claim holds '| at 40'; commit ccccccc.)"]
    with pytest.raises(SystemExit, match="'y.json'"): make_readme.fill('<!-- ledger: y.json -->')
    with pytest.raises(SystemExit, match="whose claim holds 'KL'"): make_readme.fill('<!-- ledger: x.json | KL -->')
    assert make_readme.fill('plain text') == 'plain text'
    page = make_readme.fill('intro\n<!-- ledger: x.json | steps -->\nstale row\n<!-- /ledger -->\nafter', '../../', keep=True)  # a docs page keeps its marker
    assert page.splitlines() == ['intro', '<!-- ledger: x.json | steps -->', '', '| claim | number |', '|---|---|', '| steps | 1.2 |', '',
                                 "(The ledger's rows of [x.json](../../benchmarks/RESULTS.md#xjson) whose claim holds 'steps'; commit ccccccc.)", '',
                                 '<!-- /ledger -->', 'after']
    assert make_readme.fill(page, '../../', keep=True) == page  # filling it again changes nothing


def test_license_and_the_contributors_kit():
    "LICENSE is the license pyproject.toml declares; the pre-commit hooks run the gates .ci/run runs; CONTRIBUTING.md names the tiers"
    import yaml
    tomllib = pytest.importorskip('tomllib', reason='Python 3.11 reads TOML itself')
    declared = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']['license']
    text = (ROOT / 'LICENSE').read_text()
    assert declared == 'Apache-2.0' and 'Apache License' in text and 'Version 2.0, January 2004' in text
    ci = (ROOT / '.ci' / 'run').read_text()
    hooks = [h for r in yaml.safe_load((ROOT / '.pre-commit-config.yaml').read_text())['repos'] for h in r['hooks']]
    assert {h['id'] for h in hooks} == {'nbdev-clean', 'nbdev-export', 'readme', 'results', 'ruff-errors'}
    for h in hooks: assert h['entry'] in ci, f"pre-commit hook {h['id']!r} runs {h['entry']!r}, which .ci/run does not"
    guide = (ROOT / 'CONTRIBUTING.md').read_text()
    assert all(f'--tier={t}' in guide for t in ('slow', 'all')) and 'provenance' in guide
