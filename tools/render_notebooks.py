"""The notebooks as a reader sees them, with their results.

    python tools/render_notebooks.py                      # HTML pages of every notebook's saved outputs -> _html/ (seconds)
    python tools/render_notebooks.py --execute nbs/12_viz.ipynb ...   # run these first and save their outputs in them

`--execute` runs a notebook as the tests do (`nbdev-test --save`: cells flagged slow, gpu, vllm or notest are skipped),
then keeps its outputs in a compact form: a plotly figure keeps its JSON (tens of kB) and drops the HTML copy with
plotly.js inside (about 4.6 MB a notebook); the page puts plotly.js back once, from the installed plotly package, so
the pages work offline. The notebooks stay as nbdev-clean leaves them. `_html/index.html` lists the pages.
"""
import argparse, html, json, re, subprocess, sys
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

ROOT = Path(__file__).resolve().parents[1]
PLOTLY = 'application/vnd.plotly.v1+json'


WARNING = re.compile(r'^\S+\.py:\d+: \w*Warning: .*\n(?:[ \t]+.*\n)?', re.M)  # a Python warning: where it was raised, and its source line


def quiet(text:str) -> str:
    "A stderr stream without what only a machine's run shows: progress bars redrawn with '\\r', and Python warnings naming installed files"
    return WARNING.sub('', '\n'.join(l for l in text.split('\n') if '\r' not in l))  # a progress bar redraws its line with '\r'


def compact(path:Path) -> int:
    """Keep each plotly figure as its JSON: drop its HTML copy and the output that loads plotly.js; a value shown as
    Markdown keeps that alone (its plain-text repr may name a machine's folders); stderr loses progress bars and warnings
    about installed packages. Returns the figures kept"""
    nb, n = nbformat.read(path, as_version=4), 0
    for cell in nb.cells:
        keep = []
        for out in cell.get('outputs', []):
            data = out.get('data')
            if data is not None:
                if PLOTLY in data: data.pop('text/html', None); n += 1
                elif 'window.PlotlyConfig' in str(data.get('text/html', '')): continue  # plotly.js itself: the page adds it once
                if 'text/markdown' in data: data.pop('text/plain', None)
                if not data: continue  # nothing left to show
            if out.get('name') == 'stderr':
                out['text'] = quiet(out['text'])
                if not out['text'].strip(): continue
            keep.append(out)
        cell['outputs'] = keep
    nbformat.write(nb, path)
    return n


def execute(path:Path):
    "Run the notebook as the tests do and save its outputs in it, compact and clean"
    r = subprocess.run(['nbdev-test', str(path), '--save'], cwd=ROOT, capture_output=True, text=True)
    if r.returncode: sys.exit(f"{path} failed; its outputs were not saved:\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    n = compact(path)
    subprocess.run(['nbdev-clean', '--fname', str(path)], cwd=ROOT, check=True)
    print(f"{path.relative_to(ROOT)}: outputs saved ({n} figures)")


def plotly_html(fig:dict, i:int) -> str:
    "A figure's JSON drawn by the page's plotly.js"
    div = f"tba-kit-figure-{i}"
    return (f'<div id="{div}" class="tba-kit-figure"></div><script>Plotly.newPlot("{div}", '
            f'{json.dumps(fig.get("data", []))}, {json.dumps(fig.get("layout", {}))}, {{"responsive": true}});</script>')


def page(path:Path) -> tuple:
    "The notebook's HTML page (its figures drawn from their JSON) and the number of outputs it shows"
    nb, outs = nbformat.read(path, as_version=4), 0
    for cell in nb.cells:
        for out in cell.get('outputs', []):
            outs += 1
            if PLOTLY in out.get('data', {}):
                out['data'] = {'text/html': plotly_html(out['data'][PLOTLY], outs)}
    body, _ = HTMLExporter(template_name='lab').from_notebook_node(nb)
    if 'tba-kit-figure' in body:  # plotly.js once, before the first figure
        from plotly.offline import get_plotlyjs
        body = body.replace('</head>', f'<script type="text/javascript">{get_plotlyjs()}</script></head>', 1)
    return body, outs


def notebooks() -> list: return sorted(p for p in (ROOT / 'nbs').rglob('*.ipynb') if '.ipynb_checkpoints' not in p.parts)


def render(out:Path=ROOT / '_html', paths:list|None=None) -> list:
    "Write a page per notebook and an index into `out`; returns (page, outputs shown) for each"
    out.mkdir(parents=True, exist_ok=True)
    made = []
    for p in paths or notebooks():
        rel = p.relative_to(ROOT / 'nbs').with_suffix('.html')
        body, n = page(p)
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(body)
        made.append((out / rel, n))
    rows = ''.join(f'<li><a href="{html.escape(str(f.relative_to(out)))}">{html.escape(str(f.relative_to(out).with_suffix("")))}</a>'
                   f' ({n} outputs)</li>' for f, n in made)
    (out / 'index.html').write_text(f'<!doctype html><html><head><meta charset="utf-8"><title>tba_kit notebooks</title></head>'
                                    f'<body><h1>tba_kit: the notebooks</h1><ul>{rows}</ul></body></html>')
    return made


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--execute', nargs='+', default=[], help='notebooks to run and save outputs in first')
    ap.add_argument('--out', default=str(ROOT / '_html'))
    a = ap.parse_args()
    for nb in a.execute: execute(Path(nb).resolve())
    made = render(Path(a.out))
    print(f"{len(made)} pages ({sum(n > 0 for _, n in made)} with outputs) in {a.out}; open {Path(a.out) / 'index.html'}")
