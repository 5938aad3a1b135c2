"""Write README.md from nbs/index.ipynb (nbdev-readme needs Quarto, which is not installable from PyPI here).

Markdown cells are copied; visible code cells become ```python blocks; cells marked `#| hide` and nbdev directives
are left out. `--check` fails if README.md differs from what would be written.
"""
import json, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def render(nb_path: Path) -> str:
    cells = json.loads(nb_path.read_text())['cells']
    parts = []
    for c in cells:
        src = ''.join(c['source'])
        lines = src.splitlines()
        directives = [l for l in lines if l.startswith('#|')]
        if any(d.split()[1:2] in (['hide'], ['default_exp'], ['export'], ['exporti']) for d in directives if len(d.split()) > 1): continue
        body = '\n'.join(l for l in lines if not l.startswith('#|')).strip('\n')
        if not body: continue
        parts.append(body if c['cell_type'] == 'markdown' else f"```python\n{body}\n```")
    return "<!-- generated from nbs/index.ipynb by tools/make_readme.py: edit the notebook, not this file -->\n\n" + '\n\n'.join(parts) + '\n'


def main():
    text, readme = render(ROOT / 'nbs' / 'index.ipynb'), ROOT / 'README.md'
    if '--check' in sys.argv:
        if not readme.exists() or readme.read_text() != text:
            sys.exit("README.md is out of date with nbs/index.ipynb: run `python tools/make_readme.py` and commit")
        print('README.md is up to date')
    else:
        readme.write_text(text)
        print(f'wrote {readme}')


if __name__ == '__main__':
    main()
