"""Write README.md from nbs/index.ipynb (nbdev-readme needs Quarto, which is not installable from PyPI here).

Markdown cells are copied; visible code cells become ```python blocks; cells marked `#| hide` and nbdev directives
are left out. `--check` fails if README.md differs from what would be written.
"""
import json, os, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tools'))  # make_results, the ledger
MARK = '<!-- headline results'  # the line of nbs/index.ipynb that the table replaces
SITE_ONLY = '<!-- site only -->'  # a markdown cell of nbs/index.ipynb that begins so is on the site's home page, not in the README
LEDGER_MARK = '<!-- ledger: '  # a line '<!-- ledger: FILE -->' of nbs/index.ipynb becomes the ledger's rows for that results file ('FILE | TEXT': those whose claim holds TEXT)
# the README's headline table: (results file, the start of a claim in benchmarks/RESULTS.md, how the README names it)
HEADLINE = [
    ('peer_trl.json', 'trl: final held-out accuracy', "TRL `GRPOTrainer` (its `dapo` loss), 8 training minutes: final held-out accuracy"),
    ('peer_trl.json', 'async: final held-out accuracy', "tba_kit TBA, async VarGrad (the main job), 8 training minutes"),
    ('peer_trl.json', 'async: training time to', "TBA: training time to TRL's median final, as a share of TRL's"),
    ('peer_trl.json', 'sync: final held-out accuracy', "tba_kit sync VarGrad, 8 training minutes"),
    ('peer_dapo.json', 'trl: final held-out accuracy', "Second machine, TRL rerun beside tba_kit: TRL, 8 training minutes"),
    ('peer_dapo.json', 'dapo: final held-out accuracy', "tba_kit sync with TRL's `dapo` loss, 8 training minutes"),
    ('peer_dapo.json', 'dapo: training time to', "tba_kit sync `dapo`: training time to TRL's median final, as a share of TRL's"),
    ('peer_trl_native.json', 'trl: final held-out accuracy', "Native-bf16 machine, today's precision defaults: TRL, 8 training minutes"),
    ('peer_trl_native.json', 'async: final held-out accuracy', "Native-bf16 machine: tba_kit TBA (the main job), 8 training minutes"),
    ('roofline.json', "TRL's training pass", "Trainer step on the main job's batch (s): TRL's `GRPOTrainer` training pass vs tba_kit's"),
]
# docs pages whose tables from the ledger are written into the notebook itself (between a marker and END_MARK), so that
# they read as the site shows them; `--check` fails where one is out of date
PAGES = ['nbs/results/peers.ipynb', 'nbs/results/precision.ipynb', 'nbs/results/off_policy.ipynb']
END_MARK = '<!-- /ledger -->'


def anchor(file: str) -> str: return re.sub(r'[^\w-]', '', file.lower())  # a ledger heading's id, as GitHub and the docs site make it


def ledger_table(line: str, prefix: str = '') -> str:
    "Every row the results ledger has for one results file (or those whose claim holds a text), and where they came from"
    from make_results import rows, table
    file, _, text = (x.strip() for x in line.strip().removeprefix(LEDGER_MARK).removesuffix('-->').partition('|'))
    found = [r for r in rows() if r['file'] == file and text in r['claim']]
    if not found: sys.exit(f"a notebook shows the ledger's rows of {file!r}" + (f" whose claim holds {text!r}" if text else '')
                           + ", but benchmarks/RESULTS.md has none: is it a traced results file? (python tools/make_results.py)")
    some = f"rows of [{file}]({prefix}benchmarks/RESULTS.md#{anchor(file)})" + (f" whose claim holds '{text}'" if text else '')
    return '\n'.join([*table(found), '', f"(The ledger's {some}; commit {found[0]['commit']}.)"])


def headline(prefix: str = '') -> str:
    "The headline table, each number a row of the results ledger (tools/make_results.py) with a link to its entry"
    from make_results import rows
    ledger, out = rows(), ["| measured | number | the ledger's row |", '|---|---|---|']
    for file, start, label in HEADLINE:
        found = [r for r in ledger if r['file'] == file and r['claim'].startswith(start)]
        if len(found) != 1: sys.exit(f"the README's headline {label!r} matches {len(found)} rows of benchmarks/RESULTS.md ({file}: {start!r}), not one")
        out.append(f"| {label} | {found[0]['value']} | [{found[0]['claim']}]({prefix}benchmarks/RESULTS.md#{anchor(file)}) |")
    return '\n'.join(out)


def root_from(folder: Path) -> str:
    "How a file in `folder` writes a link to the repository's root ('' at the root, '../../' from nbs/results/)"
    up = os.path.relpath(ROOT, folder)
    return '' if up == '.' else up + '/'


def fill(text: str, prefix: str = '', keep: bool = False) -> str:
    """Markdown with each marker replaced by its table from the ledger, links written from `prefix` (the repository's root
    as the file holding the text reaches it). `keep`: the marker stays, followed by its table up to END_MARK, an older
    table there replaced (a docs page keeps its tables; filling it again changes nothing)."""
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        line, i = lines[i], i + 1
        if line.startswith(MARK): out.append(headline(prefix))
        elif not line.strip().startswith(LEDGER_MARK): out.append(line)
        elif not keep: out.append(ledger_table(line, prefix))
        else:
            end = next((j for j in range(i, len(lines)) if lines[j].strip() == END_MARK or lines[j].strip().startswith(LEDGER_MARK)), None)
            if end is not None and lines[end].strip() == END_MARK: i = end + 1
            out += [line, '', ledger_table(line, prefix), '', END_MARK]
    return '\n'.join(out)


def filled_page(nb_path: Path) -> str:
    "A docs page's notebook with its tables from the ledger written in"
    nb = json.loads(nb_path.read_text())
    prefix = root_from(nb_path.parent)
    for c in nb['cells']:
        if c['cell_type'] == 'markdown':
            text = fill(''.join(c['source']), prefix, keep=True)
            c['source'] = text.splitlines(keepends=True)
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + '\n'  # as nbdev-clean writes it


def render(nb_path: Path) -> str:
    cells = json.loads(nb_path.read_text())['cells']
    parts = []
    for c in cells:
        src = ''.join(c['source'])
        lines = src.splitlines()
        directives = [l for l in lines if l.startswith('#|')]
        if any(d.split()[1:2] in (['hide'], ['default_exp'], ['export'], ['exporti']) for d in directives if len(d.split()) > 1): continue
        if c['cell_type'] == 'markdown' and src.startswith(SITE_ONLY): continue
        body = fill('\n'.join(l for l in lines if not l.startswith('#|'))).strip('\n')
        if not body: continue
        parts.append(body if c['cell_type'] == 'markdown' else f"```python\n{body}\n```")
    return "<!-- generated from nbs/index.ipynb by tools/make_readme.py: edit the notebook, not this file -->\n\n" + '\n\n'.join(parts) + '\n'


def main():
    from make_results import write_or_check
    write_or_check(ROOT / 'README.md', render(ROOT / 'nbs' / 'index.ipynb'), 'nbs/index.ipynb', 'tools/make_readme.py')
    for page in PAGES: write_or_check(ROOT / page, filled_page(ROOT / page), page, 'tools/make_readme.py')


if __name__ == '__main__':
    main()
