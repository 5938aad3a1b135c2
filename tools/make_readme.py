"""Write README.md from nbs/index.ipynb (nbdev-readme needs Quarto, which is not installable from PyPI here).

Markdown cells are copied; visible code cells become ```python blocks; cells marked `#| hide` and nbdev directives
are left out. `--check` fails if README.md differs from what would be written.
"""
import json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tools'))  # make_results, the ledger
MARK = '<!-- headline results'  # the line of nbs/index.ipynb that the table replaces
# the README's headline table: (results file, the start of a claim in benchmarks/RESULTS.md, how the README names it)
HEADLINE = [
    ('roofline.json', "TRL's training pass", "Trainer step on the main job's batch (s): TRL's `GRPOTrainer` training pass vs tba_kit's"),
    ('roofline.json', 'trainer step with the shared prompt pass', "tba_kit's trainer step (s): one prompt pass per group vs one per completion"),
    ('per_step.json', 'trl_dapo: held-out accuracy at step 30', 'Held-out accuracy at step 30: TRL `GRPOTrainer`, dapo loss, on-policy'),
    ('per_step.json', 'sync_dapo: held-out accuracy at step 30', 'Held-out accuracy at step 30: tba_kit sync, the same loss'),
    ('per_step.json', 'async_vargrad: held-out accuracy at step 30', 'Held-out accuracy at step 30: tba_kit async, VarGrad (the main job at a constant lr)'),
    ('per_step.json', 'trl_dapo: final held-out accuracy', 'Held-out accuracy at step 40: TRL `GRPOTrainer`, dapo loss'),
    ('per_step.json', 'sync_dapo: final held-out accuracy', 'Held-out accuracy at step 40: tba_kit sync, the same loss'),
    ('per_step.json', 'async_vargrad: final held-out accuracy', 'Held-out accuracy at step 40: tba_kit async, VarGrad'),
]


def headline() -> str:
    "The headline table, each number a row of the results ledger (tools/make_results.py)"
    from make_results import rows
    ledger, out = rows(), ['| measured | number | the ledger\'s row (its file, and the commit of the code) |', '|---|---|---|']
    for file, start, label in HEADLINE:
        found = [r for r in ledger if r['file'] == file and r['claim'].startswith(start)]
        if len(found) != 1: sys.exit(f"the README's headline {label!r} matches {len(found)} rows of benchmarks/RESULTS.md ({file}: {start!r}), not one")
        anchor = re.sub(r'[^\w-]', '', file.lower())  # the heading's id, as GitHub and the docs site make it
        out.append(f"| {label} | {found[0]['value']} | {found[0]['claim']} ([{file}](benchmarks/RESULTS.md#{anchor}), {found[0]['commit']}) |")
    return '\n'.join(out)


def render(nb_path: Path) -> str:
    cells = json.loads(nb_path.read_text())['cells']
    parts = []
    for c in cells:
        src = ''.join(c['source'])
        lines = src.splitlines()
        directives = [l for l in lines if l.startswith('#|')]
        if any(d.split()[1:2] in (['hide'], ['default_exp'], ['export'], ['exporti']) for d in directives if len(d.split()) > 1): continue
        body = '\n'.join(headline() if l.startswith(MARK) else l for l in lines if not l.startswith('#|')).strip('\n')
        if not body: continue
        parts.append(body if c['cell_type'] == 'markdown' else f"```python\n{body}\n```")
    return "<!-- generated from nbs/index.ipynb by tools/make_readme.py: edit the notebook, not this file -->\n\n" + '\n\n'.join(parts) + '\n'


def main():
    from make_results import write_or_check
    write_or_check(ROOT / 'README.md', render(ROOT / 'nbs' / 'index.ipynb'), 'nbs/index.ipynb', 'tools/make_readme.py')


if __name__ == '__main__':
    main()
