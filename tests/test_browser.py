"""Checked as a user sees it: a tutorial notebook executed in a real Jupyter kernel, exported to HTML with nbconvert,
opened in headless Chromium, and its plotly figures found drawn in the page (plots with traces and data), not only
present in the notebook's outputs. Chromium comes from Debian (`apt-get install chromium`, done by .ci/run); where it
is missing the test skips the browser part, unless TBA_KIT_REQUIRE_BROWSER=1 (set by CI) makes that a failure."""
import os, re, shutil, subprocess
from pathlib import Path

import nbformat
import pytest
from nbconvert import HTMLExporter
from nbconvert.preprocessors import ExecutePreprocessor

pytestmark = [pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / 'nbs' / 'tutorials' / 'objectives_compared.ipynb'
CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
                  '--disable-component-update', '--disable-sync', '--virtual-time-budget=30000']


def chromium() -> str | None:
    found = shutil.which('chromium') or shutil.which('chromium-browser')
    if found is None and os.environ.get('TBA_KIT_REQUIRE_BROWSER') == '1':
        pytest.fail('chromium is not installed (apt-get install chromium) but TBA_KIT_REQUIRE_BROWSER=1')
    return found


def browse(browser: str, page: Path, tmp: Path, *args) -> subprocess.CompletedProcess:
    cmd = [browser, *CHROMIUM_FLAGS, f'--user-data-dir={tmp / "chromium-profile"}', *args, page.as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def drawn_plots(dom: str) -> list:
    "For each plotly graph in the page's DOM: (number of drawn traces, number of line / marker points and non-empty bars drawn)"
    plots = re.split(r'<div[^>]*class="[^"]*js-plotly-plot', dom)[1:]
    out = []
    for p in plots:
        traces = len(re.findall(r'<g class="trace (?:scatter|bars)', p))
        points = sum(d.count('L') + 1 for d in re.findall(r'<path class="js-line" d="(M[^"]*)"', p))
        points += len(re.findall(r'<path class="point"', p))
        points += sum(top != bottom for top, bottom in re.findall(r'<g class="point"><path d="M[\d.]+,([\d.]+)V([\d.]+)H', p))
        out.append((traces, points))
    return out


def test_tutorial_figures_render_in_a_browser(tmp_path):
    nb = nbformat.read(TUTORIAL, as_version=4)
    ExecutePreprocessor(timeout=900, kernel_name='python3').preprocess(nb, {'metadata': {'path': str(TUTORIAL.parent)}})
    figures = [o for c in nb.cells if c.cell_type == 'code' for o in c.outputs if 'application/vnd.plotly.v1+json' in o.get('data', {})]
    assert len(figures) == 8, 'the tutorial shows eight figures'
    assert all('text/html' in o['data'] for o in figures), 'figures must carry an HTML copy for exported pages'
    body, _ = HTMLExporter().from_notebook_node(nb)
    page = tmp_path / 'objectives_compared.html'
    page.write_text(body)
    browser = chromium()
    if browser is None: pytest.skip('chromium is not installed (apt-get install chromium); the notebook ran and exported')
    dom = browse(browser, page, tmp_path, '--dump-dom').stdout
    plots = drawn_plots(dom)
    assert len(plots) == 8, f'{len(plots)} plotly graphs drawn in the page, expected 8'
    # three kept runs of the multiples task, ~80 steps each: reward curves (rolling means) and held-out accuracy at 3
    # evaluations; diversity: 3 runs x 5 measures x ~8 measurements; KL vs reward: 3 points; buffer histograms: 3 runs x
    # (staleness, reward), bars of non-zero height; each run's exact answers on one prompt: policy and target, 7 right
    # answers and "other" (the target puts mass on every right answer); the main job's finals: 2 arms x 4 objectives x 3 seeds
    expected = [(3, 100), (12, 60), (3, 3), (6, 10), (2, 8), (2, 8), (2, 8), (2, 24)]
    names = ['curves', 'diversity', 'pareto', 'buffer_histograms', 'answers tb', 'answers vargrad', 'answers grpo', 'finals']
    for (traces, points), (min_traces, min_points), name in zip(plots, expected, names):
        assert traces >= min_traces and points >= min_points, f'{name}: {traces} traces and {points} points drawn'
    shot = Path(os.environ.get('TBA_KIT_SCREENSHOT_DIR', tmp_path)) / 'objectives_compared.png'
    browse(browser, page, tmp_path, '--window-size=1200,4200', f'--screenshot={shot}')
    assert shot.exists() and shot.stat().st_size > 50_000, 'the screenshot of the page is missing or blank'


SAVED = ['12_viz.ipynb', '10_loop.ipynb', '06d_answers.ipynb', 'tutorials/bring_your_own_task.ipynb', 'tutorials/tba_from_scratch.ipynb',
         'tutorials/diversity.ipynb']


def test_notebooks_show_their_saved_results_in_a_browser(tmp_path):
    "The pages of `python tools/render_notebooks.py`: the results saved in the notebooks (records, tables, figures) reach the reader, drawn"
    import sys; sys.path.insert(0, str(ROOT / 'tools'))
    from render_notebooks import PLOTLY, render
    paths = [ROOT / 'nbs' / p for p in SAVED]
    made = render(tmp_path / 'html', paths)
    assert (tmp_path / 'html' / 'index.html').read_text().count('<li>') == len(SAVED)
    browser = chromium()
    for nb, (page, shown) in zip(paths, made):
        saved = nbformat.read(nb, as_version=4)
        figures = sum(PLOTLY in o.get('data', {}) for c in saved.cells if c.cell_type == 'code' for o in c.outputs)
        assert shown > 0, f'{nb.name} has no saved outputs: python tools/render_notebooks.py --execute {nb.relative_to(ROOT)}'
        assert len(page.read_text()) < 6_000_000 and nb.stat().st_size < 400_000, f'{nb.name}: outputs saved in a compact form keep pages and notebooks small'
        if browser is None: continue
        dom = browse(browser, page, tmp_path, '--dump-dom').stdout
        assert dom.count('jp-OutputArea-output') >= shown, f'{page.name}: {dom.count("jp-OutputArea-output")} outputs in the page, {shown} saved'
        plots = drawn_plots(dom)
        assert len(plots) == figures and all(t > 0 and n > 0 for t, n in plots), f'{page.name}: {plots} drawn, {figures} figures saved'
    if browser is None: pytest.skip('chromium is not installed (apt-get install chromium); the pages were rendered')


@pytest.mark.slow
def test_the_documentation_site_renders_with_navigation_figures_and_api_docs(tmp_path):
    "tools/make_docs.py: every notebook is a page; in Chromium the pages render, every link of the navigation resolves, saved figures are drawn, and the API shows as show_doc signatures, not as `#| export` cells"
    import json, sys; sys.path.insert(0, str(ROOT / 'tools'))
    import make_docs
    from render_notebooks import PLOTLY
    site = make_docs.build()
    notebooks = sorted(p.relative_to(ROOT / 'nbs').with_suffix('.html') for p in (ROOT / 'nbs').rglob('*.ipynb') if '.ipynb_checkpoints' not in p.parts)
    assert all((site / p).exists() for p in notebooks), [p for p in notebooks if not (site / p).exists()]
    for page in (make_docs.PAGES / p.with_suffix('.ipynb') for p in notebooks):  # what the pages were made from
        nb = json.loads(page.read_text())
        assert not any(l.startswith('#|') for c in nb['cells'] for l in ''.join(c['source']).splitlines()), f'{page.name}: nbdev directives left'
        assert '/tmp/' not in json.dumps([c.get('outputs', []) for c in nb['cells']]), f'{page.name}: a temporary folder in its outputs'
    browser = chromium()
    if browser is None: pytest.skip('chromium is not installed (apt-get install chromium); the site was built')
    dom = browse(browser, site / 'index.html', tmp_path, '--dump-dom').stdout
    assert 'Bring your own' in dom, 'the home page is not the README guide'
    links = set(re.findall(r'<a [^>]*class="md-nav__link[^"]*"[^>]*href="([^"#]+)"', dom)) | set(re.findall(r'<a [^>]*href="([^"#]+)"[^>]*class="md-nav__link', dom))
    assert len(links) >= len(notebooks) - 1, f'{len(links)} links in the navigation for {len(notebooks)} pages'
    assert all((site / l).resolve().exists() for l in links if '://' not in l), [l for l in links if '://' not in l and not (site / l).resolve().exists()]
    assert '| measured |' not in dom and 'the ledger' in dom and dom.count('<tr>') > 5, "the home page lacks the README's headline table"
    sub = '/' + make_docs.SITE_URL.split('://', 1)[1].split('/', 1)[1]  # the Documentation URL's path: '/tba_kit/'
    ids = {page.resolve(): set(re.findall(r'\sid="([^"]+)"', page.read_text())) for page in site.rglob('*.html')}
    for page in list(ids):  # every link and image of every page, not only the navigation, reaches a file of the site, and its anchor an id there
        targets = re.findall(r'(?:href|src)="([^"?]*)', page.read_text())
        local = [t for t in targets if t and not re.match(r'[a-z]+:|//', t)]
        at = lambda t: site / t[len(sub):] if t.startswith(sub) else page.parent / t  # 404.html names pages under the subpath
        broken = [t for t in local if t.partition('#')[0] and not at(t.partition('#')[0]).resolve().exists()]
        assert not broken, f'{page.relative_to(site.resolve())}: {broken[:5]}'
        anchors = [(t, at(t.partition('#')[0]).resolve() if t.partition('#')[0] else page.resolve()) for t in local if '#' in t and t.partition('#')[2]]
        dangling = [t for t, target in anchors if target.suffix == '.html' and t.partition('#')[2] not in ids.get(target, set())]
        assert not dangling, f'{page.relative_to(site.resolve())}: links to anchors no heading has: {dangling[:5]}'
    math = browse(browser, site / '06d_answers.html', tmp_path, '--dump-dom').stdout
    assert 'class="MathJax' in math and 'src="MATHJAX_URL' not in math, "06d_answers: the math is not typeset (MathJax did not run)"
    core = browse(browser, site / '00_core.html', tmp_path, '--dump-dom').stdout
    assert 'Trajectory' in core and '#| export' not in core and 'show_doc(' not in core and '{target=' not in core, 'the API of 00_core is not shown as show_doc renders it'
    for name in SAVED:  # notebooks whose lessons are figures: drawn on their pages as in the notebook's own page
        saved = nbformat.read(ROOT / 'nbs' / name, as_version=4)
        figures = sum(PLOTLY in o.get('data', {}) for c in saved.cells if c.cell_type == 'code' for o in c.outputs)
        plots = drawn_plots(browse(browser, site / Path(name).with_suffix('.html'), tmp_path, '--dump-dom').stdout)
        assert len(plots) == figures and all(t > 0 and n > 0 for t, n in plots), f'{name}: {plots} drawn, {figures} figures saved'
