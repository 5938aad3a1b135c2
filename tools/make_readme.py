"""Write README.md from nbs/index.ipynb (nbdev-readme needs Quarto, which is not installable from PyPI here).

Markdown cells are copied; visible code cells become ```python blocks; cells marked `#| hide` and nbdev directives
are left out. `--check` fails if README.md differs from what would be written.
"""
import json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tools'))  # make_results, the ledger
MARK = '<!-- headline results'  # the line of nbs/index.ipynb that the table replaces
LEDGER_MARK = '<!-- ledger: '  # a line '<!-- ledger: FILE -->' of nbs/index.ipynb becomes the ledger's rows for that results file ('FILE | TEXT': those whose claim holds TEXT)
# the README's headline table: (results file, the start of a claim in benchmarks/RESULTS.md, how the README names it)
HEADLINE = [
    ('peer_trl.json', 'trl: final held-out accuracy', "TRL `GRPOTrainer` (dapo), 8 training minutes: final held-out accuracy"),
    ('peer_trl.json', 'async: final held-out accuracy', "tba_kit TBA, async VarGrad (the main job), 8 training minutes"),
    ('peer_trl.json', 'async: training time to', "TBA: training time to TRL's median final, as a share of TRL's"),
    ('peer_trl.json', 'sync: final held-out accuracy', "tba_kit sync VarGrad, 8 training minutes"),
    ('peer_trl_native.json', 'trl: final held-out accuracy', "Native-bf16 machine (AVX512-BF16), today's precision defaults: TRL, 8 training minutes"),
    ('peer_trl_native.json', 'async: final held-out accuracy', "Native-bf16 machine: tba_kit TBA (the main job), 8 training minutes"),
    ('peer_trl_native.json', 'async: training time to', "Native-bf16 machine: TBA's training time to TRL's median final, as a share of TRL's"),
    ('peer_dapo.json', 'trl: final held-out accuracy', "Second machine, TRL rerun beside tba_kit: TRL, 8 training minutes"),
    ('peer_dapo.json', 'dapo: final held-out accuracy', "tba_kit sync with TRL's dapo loss, 8 training minutes"),
    ('peer_dapo.json', 'dapo: training time to', "tba_kit sync dapo: training time to TRL's median final, as a share of TRL's"),
    ('peer_trl.json', 'trl: held-out accuracy at step 10', "Per step: TRL at step 10"),
    ('peer_trl.json', 'async: held-out accuracy at step 10', "Per step: TBA at step 10"),
    ('peer_dapo.json', 'trl: held-out accuracy at step 20', "Per step: TRL at step 20 (second machine)"),
    ('peer_dapo.json', 'dapo: held-out accuracy at step 20', "Per step: tba_kit sync dapo at step 20"),
    ('roofline.json', "TRL's training pass", "Trainer step on the main job's batch (s): TRL's `GRPOTrainer` training pass vs tba_kit's"),
    ('roofline.json', 'trainer step with the shared prompt pass', "tba_kit's trainer step (s): one prompt pass per group vs one per completion"),
]


def anchor(file: str) -> str: return re.sub(r'[^\w-]', '', file.lower())  # a ledger heading's id, as GitHub and the docs site make it


def ledger_table(line: str) -> str:
    "Every row the results ledger has for one results file (or those whose claim holds a text), and where they came from"
    from make_results import rows, table
    file, _, text = (x.strip() for x in line.strip().removeprefix(LEDGER_MARK).removesuffix('-->').partition('|'))
    found = [r for r in rows() if r['file'] == file and text in r['claim']]
    if not found: sys.exit(f"nbs/index.ipynb shows the ledger's rows of {file!r}" + (f" whose claim holds {text!r}" if text else '')
                           + ", but benchmarks/RESULTS.md has none: is it a traced results file? (python tools/make_results.py)")
    some = f"rows of [{file}](benchmarks/RESULTS.md#{anchor(file)})" + (f" whose claim holds '{text}'" if text else '')
    return '\n'.join([*table(found), '', f"(The ledger's {some}; commit {found[0]['commit']}.)"])


def headline() -> str:
    "The headline table, each number a row of the results ledger (tools/make_results.py)"
    from make_results import rows
    ledger, out = rows(), ['| measured | number | the ledger\'s row (its file, and the commit of the code) |', '|---|---|---|']
    for file, start, label in HEADLINE:
        found = [r for r in ledger if r['file'] == file and r['claim'].startswith(start)]
        if len(found) != 1: sys.exit(f"the README's headline {label!r} matches {len(found)} rows of benchmarks/RESULTS.md ({file}: {start!r}), not one")
        out.append(f"| {label} | {found[0]['value']} | {found[0]['claim']} ([{file}](benchmarks/RESULTS.md#{anchor(file)}), {found[0]['commit']}) |")
    return '\n'.join(out)


def filled(line: str) -> str:
    "A line of nbs/index.ipynb, a marker replaced by its table from the ledger"
    return headline() if line.startswith(MARK) else ledger_table(line) if line.strip().startswith(LEDGER_MARK) else line


def render(nb_path: Path) -> str:
    cells = json.loads(nb_path.read_text())['cells']
    parts = []
    for c in cells:
        src = ''.join(c['source'])
        lines = src.splitlines()
        directives = [l for l in lines if l.startswith('#|')]
        if any(d.split()[1:2] in (['hide'], ['default_exp'], ['export'], ['exporti']) for d in directives if len(d.split()) > 1): continue
        body = '\n'.join(filled(l) for l in lines if not l.startswith('#|')).strip('\n')
        if not body: continue
        parts.append(body if c['cell_type'] == 'markdown' else f"```python\n{body}\n```")
    return "<!-- generated from nbs/index.ipynb by tools/make_readme.py: edit the notebook, not this file -->\n\n" + '\n\n'.join(parts) + '\n'


def main():
    from make_results import write_or_check
    write_or_check(ROOT / 'README.md', render(ROOT / 'nbs' / 'index.ipynb'), 'nbs/index.ipynb', 'tools/make_readme.py')


if __name__ == '__main__':
    main()
