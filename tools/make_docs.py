"""Build the documentation site from the notebooks: `_site/index.html`.

    python tools/make_docs.py            # process nbs/ into _docs/, then build _site/ with mkdocs (a few minutes)
    python tools/make_docs.py --serve    # the same, then serve it at http://127.0.0.1:8000 while you edit

Quarto cannot be installed from the package registries, so the site is nbdev's processing without it: each notebook
goes through nbdev's own processors for its docs (directives and hidden cells removed, exported definitions replaced
by their `show_doc` signature and docs), except that only the exported cells and the `show_doc` calls run (the lesson
cells keep the outputs saved in the notebook; nothing else executes). Plotly figures saved as their JSON are drawn by
plotly.js, which the site carries. mkdocs-material with mkdocs-jupyter renders the pages, with navigation and search.
"""
import argparse, ast, functools, json, os, re, shutil, subprocess, sys, uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tools'))
from make_readme import fill, root_from  # noqa: E402  the README's tables of numbers from the ledger
from render_notebooks import PLOTLY  # noqa: E402
from docs_hooks import MATHJAX  # noqa: E402
SRC, DOCS, SITE = ROOT / 'nbs', ROOT / '_docs', ROOT / '_site'
PAGES = DOCS / 'pages'  # the processed notebooks; mkdocs.yml sits beside this folder
SKIP = {'add_links', 'ai_magics'}  # links into a Quarto site; AI prompt cells (none here)


def runs_for_docs(cell) -> bool:
    "Whether a cell runs while processing: exported definitions and `show_doc` calls, nothing a lesson computes"
    if cell.cell_type != 'code' or not cell.source.strip(): return False
    if cell.directives_.keys() & {'export', 'exports', 'exporti', 'exec_doc'}: return True
    try: trees = ast.parse(cell.source.replace('await ', '')).body  # top-level await (lesson cells) parses as a name here
    except SyntaxError: return False
    return bool(trees) and all(isinstance(t, ast.Expr) and getattr(getattr(t.value, 'func', None), 'id', None) == 'show_doc' for t in trees)


@functools.cache
def processors() -> list:
    "nbdev's docs processors, with execution limited to `runs_for_docs`"
    from nbdev.processors import FilterDefaults, exec_show_docs

    class exec_exports(exec_show_docs):
        "Run the exported cells and the show_doc calls of a notebook, so that its show_doc cells have their output"
        def __call__(self, cell):
            if not getattr(self.nb, 'has_docs_', False) or not hasattr(self, 'k') or not runs_for_docs(cell): return
            # a script's entry point (`if __name__ == '__main__': ...`) is not run: here __name__ is '__main__' too
            guard = "if __name__ == '__main__'"
            if guard in cell.source: self.k.run_cell('\n'.join(l for l in cell.source.splitlines() if not l.startswith(guard)))
            else: self.k.cell(cell)  # its outputs (a show_doc's) are kept in the cell
            if (e := self.k.exc): raise RuntimeError(f"{self.nb.path_}: cell {cell.idx_} failed while building the docs: {type(e).__name__}: {e}\n{cell.source}") from e
    return [exec_exports if p is exec_show_docs else p for p in FilterDefaults().base_procs() if p.__name__ not in SKIP]


def draw_plotly(outputs: list) -> int:
    "Replace each saved plotly figure (its JSON) by HTML that plotly.js draws; the number replaced"
    n = 0
    for out in outputs:
        fig = out.get('data', {}).pop(PLOTLY, None)
        if fig is None: continue
        div = f'plotly-{uuid.uuid4().hex[:12]}'
        out['data'] = {'text/html': f'<div id="{div}" class="plotly-graph-div" style="height:{fig.get("layout", {}).get("height", 450)}px"></div>'
                                    f'<script>window.addEventListener("load", () => Plotly.newPlot("{div}", {json.dumps(fig.get("data", []))}, '
                                    f'{json.dumps(fig.get("layout", {}))}, {{"responsive": true}}));</script>'}
        n += 1
    return n


TEMP = re.compile(r"/tmp/[^/\s'\"`|)]+")  # a run's temporary folder in a saved output: this machine's, meaningless to a reader


def no_temp_paths(outputs: list):
    "Show the temporary folders that saved outputs name as `<run folder>`"
    for out in outputs:
        if 'text' in out: out['text'] = TEMP.sub('<run folder>', ''.join(out['text']))
        for mime, v in out.get('data', {}).items():
            if isinstance(v, (str, list)) and mime.startswith('text/'): out['data'][mime] = TEMP.sub('<run folder>', ''.join(v))


CELL_KEYS = {'code': {'cell_type', 'id', 'metadata', 'source', 'outputs', 'execution_count'}, 'markdown': {'cell_type', 'id', 'metadata', 'source', 'attachments'},
             'raw': {'cell_type', 'id', 'metadata', 'source', 'attachments'}}


def finish(cell: dict) -> tuple:
    "A processed cell as a page shows it: a show_doc becomes its markdown, directives and nbdev's own keys go; (cell, figures drawn)"
    src = '\n'.join(l for l in ''.join(cell['source']).splitlines() if not l.startswith('#|'))
    if cell['cell_type'] == 'code' and src.strip().startswith('show_doc('):
        md = ''.join(''.join(o['data']['text/markdown']) for o in cell.get('outputs', []) if 'text/markdown' in o.get('data', {}))
        md = re.sub(r'\]\(([^)]*)\)\{target="_blank"[^}]*\}', r'](\1)', md)  # Quarto's link attributes: Markdown shows them as text
        return {'cell_type': 'markdown', 'metadata': {}, 'source': md}, 0
    cell = {k: v for k, v in cell.items() if k in CELL_KEYS[cell['cell_type']]} | {'source': src}
    no_temp_paths(cell.get('outputs', []))
    return cell, draw_plotly(cell.get('outputs', []))


def process(nb_path: Path, dest: Path) -> int:
    "One notebook through nbdev's processors into `dest`, with a title cell and its figures drawable; its figures"
    from fastcore.nbio import read_nb, write_nb
    from nbdev.process import NBProcessor
    nb = read_nb(nb_path)
    nb.path_ = str(nb_path)
    NBProcessor(nb=nb, procs=processors(), rm_directives=True).process()
    fm = getattr(nb, 'frontmatter_', {}) or {}
    cells = [c for c in nb.cells if not (c.cell_type == 'raw' and c.source.lstrip().startswith('---'))]  # Quarto's front matter
    head = f"# {fm.get('title', nb_path.stem)}\n\n" + (f"> {fm['description']}\n" if fm.get('description') else '')
    nb.cells = [dict(cell_type='markdown', metadata={}, source=head)] + cells
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_nb(nb, dest)
    raw = json.loads(dest.read_text())
    for c in raw['cells']:  # the README's tables from the ledger, and links that work on the site
        if c['cell_type'] != 'markdown': continue
        origin = ROOT / 'README.md' if nb_path == SRC / 'index.ipynb' else nb_path  # index.ipynb is written as the README
        text = fill(''.join(c['source']), root_from(origin.parent), keep=origin != ROOT / 'README.md')
        c['source'] = site_links(text, origin, dest)
    done = [finish(c) for c in raw['cells']]
    raw['cells'] = [c for c, _ in done if ''.join(c['source']).strip() or c.get('outputs')]
    dest.write_text(json.dumps(raw, indent=1))
    return sum(n for _, n in done)


REPO = 'https://github.com/tba-kit/tba_kit/blob/main'  # pyproject.toml's Repository: files that are not pages
SITE_URL = 'https://tba-kit.github.io/tba_kit/'  # pyproject.toml's Documentation
EXTRA_PAGES = {'benchmarks/RESULTS.md': 'Results ledger', 'CONTRIBUTING.md': 'Contributing'}  # Markdown files of the repository shown as pages
LINK = re.compile(r'(\]\()([^)\s]+)(\))')


def site_link(target: str, origin: Path, page: Path) -> str:
    "A link of the file at `origin` (in the repository), as the page at `page` (in PAGES) must write it"
    if re.match(r'[a-z]+:|#', target): return target  # a URL or an anchor
    path, _, anchor = target.partition('#')
    repo = (origin.parent / path).resolve().relative_to(ROOT).as_posix()
    if repo.startswith('nbs/') and repo.endswith('.ipynb'): dest = PAGES / repo[4:].replace('.ipynb', '.html')
    elif repo in EXTRA_PAGES: dest = PAGES / Path(repo).with_suffix('.html').name
    elif repo.endswith(('.svg', '.png')):
        dest = PAGES / 'assets' / Path(repo).name
        dest.parent.mkdir(parents=True, exist_ok=True); shutil.copy(ROOT / repo, dest)
    else: return f"{REPO}/{repo}" + (f"#{anchor}" if anchor else '')
    return os.path.relpath(dest, page.parent) + (f"#{anchor}" if anchor else '')


def site_links(text: str, origin: Path, page: Path) -> str:
    return LINK.sub(lambda m: m.group(1) + site_link(m.group(2), origin, page) + m.group(3), text)


LEDGER = 'benchmarks/RESULTS.md'
# the cells' 'In [ ]:' prompts hold no numbers (the notebooks are saved clean): hidden, the code and tables get their width
CSS = '''.jupyter-wrapper .jp-InputPrompt, .jupyter-wrapper .jp-OutputPrompt { display: none !important; }
.md-grid { max-width: 1440px; }
'''
# the course: the home page, the tutorials in learning order, the modules in dependency order, then the results
COURSE = ['tutorials/tour.ipynb', 'tutorials/tba_from_scratch.ipynb', 'tutorials/quickstart.ipynb', 'tutorials/bring_your_own_task.ipynb', 'tutorials/from_trl.ipynb',
          'tutorials/objectives_compared.ipynb', 'tutorials/diversity.ipynb', 'tutorials/scaling_out.ipynb']
RESULTS = ['results/peers.ipynb', 'results/precision.ipynb', 'results/off_policy.ipynb', 'tutorials/measurements.ipynb']


def nav(pages: list) -> list:
    "The site's navigation as a course: start here (the tutorials in learning order), the modules by number, the results"
    rel = [p.relative_to(SRC).as_posix() for p in pages]
    placed = {'index.ipynb', *COURSE, *RESULTS}
    if missing := [r for r in rel if '/' in r and r not in placed]:
        raise SystemExit(f"tools/make_docs.py: {missing} have no place in the navigation: add them to COURSE or RESULTS")
    title = lambda r: ''.join(json.loads((PAGES / r).read_text())['cells'][0]['source']).splitlines()[0].lstrip('# ').strip()
    modules = [r for r in rel if '/' not in r and r != 'index.ipynb']
    return ([{'Home': 'index.ipynb'}, {'Start here': [{title(r): r} for r in COURSE if r in rel]}]
            + [{'Modules': [{f"{r.split('_')[0]} {title(r)}": r} for r in modules]}]
            + [{'Results': [{title(r): r} for r in RESULTS if r in rel] + [{EXTRA_PAGES[LEDGER]: Path(LEDGER).name}]}]
            + [{name: Path(f).name} for f, name in EXTRA_PAGES.items() if f != LEDGER])


def write_config(pages: list) -> Path:
    "mkdocs.yml for the processed pages (written beside them: nothing about the site is kept in the repository's root)"
    import yaml
    cfg = {'site_name': 'tba_kit', 'site_description': 'Trajectory Balance with Asynchrony for RL post-training of language models',
           'docs_dir': str(PAGES), 'site_dir': str(SITE), 'use_directory_urls': False,
           'theme': {'name': 'material', 'features': ['navigation.sections', 'navigation.expand', 'search.highlight']},
           'site_url': SITE_URL,  # the Documentation URL: 404.html and the sitemap name their pages under its subpath
           'plugins': ['search', {'mkdocs-jupyter': {'execute': False, 'include_source': True,
                                                      'ignore_h1_titles': True,  # the navigation's titles (module numbers, 'Home'), not each page's h1
                                                      'custom_mathjax_url': f'{MATHJAX}?config=TeX-AMS-MML_HTMLorMML-full,Safe'}}],
           'hooks': [str(ROOT / 'tools' / 'docs_hooks.py')],  # the placeholder becomes each page's path to the site's MathJax
           'extra_javascript': ['assets/plotly.min.js'], 'extra_css': ['assets/site.css'], 'nav': nav(pages)}
    path = DOCS / 'mkdocs.yml'
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def build(serve: bool = False) -> Path:
    import importlib.util, plotly
    shutil.rmtree(DOCS, ignore_errors=True); shutil.rmtree(SITE, ignore_errors=True)
    pages = sorted(p for p in SRC.rglob('*.ipynb') if '.ipynb_checkpoints' not in p.parts)
    figures = sum(process(p, PAGES / p.relative_to(SRC)) for p in pages)
    for f in EXTRA_PAGES: (PAGES / Path(f).name).write_text(site_links((ROOT / f).read_text(), ROOT / f, PAGES / Path(f).name))
    (PAGES / 'assets').mkdir(exist_ok=True)
    (PAGES / 'assets' / 'site.css').write_text(CSS)
    shutil.copy(Path(plotly.__file__).parent / 'package_data' / 'plotly.min.js', PAGES / 'assets' / 'plotly.min.js')
    mathjax = importlib.util.find_spec('jupyter_server_mathjax').submodule_search_locations[0]  # its files, without importing jupyter_server
    shutil.copytree(Path(mathjax) / 'static', PAGES / 'assets' / 'mathjax')  # the math, offline
    cfg = write_config(pages)
    subprocess.run([sys.executable, '-m', 'mkdocs', 'serve' if serve else 'build', '-f', str(cfg), '--quiet'], check=True,
                   env=os.environ | {'NO_MKDOCS_2_WARNING': '1'})
    print(f"{len(pages)} pages, {figures} figures -> {SITE / 'index.html'}")
    return SITE


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--serve', action='store_true', help='serve the site while you edit (mkdocs serve)')
    build(ap.parse_args().serve)
