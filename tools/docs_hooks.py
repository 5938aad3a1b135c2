"""mkdocs hooks for the documentation site (tools/make_docs.py names this file in mkdocs.yml).

- MathJax ships with the site (`jupyter-server-mathjax`'s copy of MathJax 2.7, in assets/mathjax/), so the math of
  the notebooks renders offline and over `file://`; mkdocs-jupyter writes one URL into every page, so it writes a
  placeholder that each page gets as a path relative to itself.
- A notebook page's "on this page" links are made from the notebook as Markdown (python-markdown's ids: lower case, a
  repeated heading suffixed `_1`), its headings by nbconvert (other ids): each heading gets the id its link names.
"""
import html, os, re

MATHJAX = 'MATHJAX_URL'  # the placeholder tools/make_docs.py gives mkdocs-jupyter as custom_mathjax_url
HEADING = re.compile(r'<h([1-6])([^>]*?)\sid="([^"]*)"([^>]*)>(.*?)</h\1>', re.S)


def text(fragment: str) -> str:
    "A heading's text as the table of contents names it: tags, the permalink mark and spacing dropped"
    return ' '.join(html.unescape(re.sub(r'<[^>]+>|¶', '', fragment)).split())


def toc_ids(toc) -> list:
    "(title, id) of every entry of a page's table of contents, in order"
    out = []
    for link in toc:
        out.append((text(link.title), link.id))
        out += toc_ids(link.children)
    return out


def with_toc_ids(output: str, toc) -> str:
    """The page with each heading's id replaced by the id its table-of-contents link names: entries and headings matched
    in order, by their text (the table's lacks code spans: the heading The `process` placement is listed as 'The placement')"""
    heads, new_ids, at = list(HEADING.finditer(output)), {}, 0
    for title, anchor in toc_ids(toc):
        for j in range(at, len(heads)):
            t, bare = text(heads[j].group(5)), text(re.sub(r'<code>.*?</code>', '', heads[j].group(5)))  # bare: as the table lists it
            if title and title in (t, bare): new_ids[j], at = anchor, j + 1; break
    def one(j, m):
        new = new_ids.get(j)
        if new is None or new == m.group(3): return m.group(0)
        inner = m.group(5).replace(f'href="#{m.group(3)}"', f'href="#{new}"')
        return f'<h{m.group(1)}{m.group(2)} id="{new}"{m.group(4)}>{inner}</h{m.group(1)}>'
    out, last = [], 0
    for j, m in enumerate(heads): out += [output[last:m.start()], one(j, m)]; last = m.end()
    return ''.join(out) + output[last:]


def on_post_page(output: str, page, config) -> str:
    here = os.path.dirname(page.file.dest_uri) or '.'
    output = output.replace(f'src="{MATHJAX}', f'src="{os.path.relpath("assets/mathjax/MathJax.js", here)}')
    return with_toc_ids(output, page.toc) if page.file.src_uri.endswith('.ipynb') else output
