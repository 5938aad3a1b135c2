"""Write benchmarks/RESULTS.md, the results ledger, from the files in benchmarks/results/.

A results file is traced when it records its provenance (`benchmarks/evidence.py:provenance`: command, commit, machine,
versions, date). Each traced file gives one row per claim, made by the `claims(record)` function of the script its
command ran. The files without provenance are listed as such: no number in them is a traced claim until the script is
rerun. `--check` fails if RESULTS.md differs from what would be written (CI runs it, as for the README).
"""
import collections, functools, importlib.util, json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS, LEDGER = ROOT / 'benchmarks' / 'results', ROOT / 'benchmarks' / 'RESULTS.md'
sys.path.insert(0, str(ROOT / 'benchmarks'))  # the scripts import their helpers (evidence.py) from there


def provenance_of(rec) -> dict | None:
    "The provenance a results file records (at its top level), or None"
    return rec if isinstance(rec, dict) and rec.get('commit') and rec.get('command') else None


def script_of(command: str) -> Path:
    "The benchmark script a recorded command ran"
    m = re.search(r'benchmarks/(\w+)\.py', command)
    if not m: raise ValueError(f"command {command!r} names no script under benchmarks/")
    return ROOT / 'benchmarks' / f'{m.group(1)}.py'


@functools.cache
def script_module(script: Path):
    spec = importlib.util.spec_from_file_location(f'ledger_{script.stem}', script)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    if not hasattr(mod, 'claims'): raise ValueError(f"{script.relative_to(ROOT)} wrote a traced result but has no claims(record) for the ledger")
    return mod


def claims_of(script: Path, rec: dict) -> list:
    "The rows `script`'s `claims(record)` makes of a record it wrote"
    return script_module(script).claims(rec)


def run_files(v) -> list:
    "The run records a result names in its `runs`, at any depth (lists, dicts' values): their paths"
    if isinstance(v, str): return [v] if v.endswith('.json') else []
    if isinstance(v, dict): v = list(v.values())
    return [f for x in v for f in run_files(x)] if isinstance(v, list) else []


@functools.cache
def run_record(path: Path) -> dict | None:
    "A run's kept record, read once however many ledger lines ask for it (None: not here)"
    return json.loads(path.read_text()) if path.exists() else None


def kept_runs(rec: dict) -> tuple:
    "The records of the runs a result names that are still here (benchmarks/results/<name>_runs/), and how many it names"
    named = run_files(rec.get('runs'))
    return [r for r in (run_record(ROOT / n) for n in named) if r is not None], len(named)


def counted(found) -> str:
    "'a (3 runs), b (1 run)': most common first"
    return ', '.join(f"{t} ({n} run{'s' * (n > 1)})" for t, n in collections.Counter(found).most_common())


def of_runs(rec: dict, what) -> str:
    "`what(record)` of a result's kept runs, named once where they agree and counted where they differ, else of the result itself"
    found = [*map(what, kept_runs(rec)[0] or [rec])]
    return found[0] if len(set(found)) == 1 else counted(found)


def commit_of(rec: dict) -> str:
    "The code a result's numbers came from: its runs' commits, counted, where it kept their records (a --report names its own), else its own"
    made = lambda r: r['commit'][:7] + (' +changes' if r.get('dirty') else '')
    kept, named = kept_runs(rec)
    if not kept: return made(rec)
    missing = f"; {named - len(kept)} of the {named} runs it names are not here" if len(kept) < named else ''
    return counted(made(r) if 'commit' in r else f"not recorded (made before runs recorded their commit; analysed at {made(rec)})" for r in kept) + missing


def machine(m: dict) -> str:
    emulated = f" run as {m['emulated_isa']}" if m.get('emulated_isa') else ''
    return f"{m['cpu']}, {m['cores']} cores, {'/'.join(m['isa']) or 'no AVX'}{emulated}" + (f", {m['gpu']}" if m.get('gpu') else '')


def machine_of(r: dict) -> str:
    "Where a run ran (one recorded before its machine was: its device, or its CPU's capability)"
    if 'machine' in r: return machine(r['machine'])
    if r.get('device') not in (None, 'cpu'): return r['device']
    return f"a CPU ({r['cpu_capability']})" if 'cpu_capability' in r else 'machine not recorded'


def versions_of(r: dict) -> str:
    v = r.get('versions')
    return f"torch {v.get('torch')}, transformers {v.get('transformers')}, TRL {v.get('trl')}" if v else 'versions not recorded'


def date_of(rec: dict) -> str:
    "The days a result's kept runs ran, else the day it was made"
    kept = kept_runs(rec)[0]
    days = sorted(r['date'][:10] for r in kept if 'date' in r)
    if not days: return rec['date'][:10] + (' (the analysis: its runs were not dated)' if kept else '')
    return (days[0] if days[0] == days[-1] else f"{days[0]} to {days[-1]}") + (f" ({n} run{'s' * (n > 1)} not dated)" if (n := len(kept) - len(days)) else '')


def table(claims: list) -> list:
    "Claims as the lines of a markdown table"
    return ['| claim | number |', '|---|---|', *(f"| {cell(c['claim'])} | {cell(c['value'])} |" for c in claims)]


def cell(s) -> str: return str(s).replace('|', '\\|').replace('\n', ' ')


def results() -> tuple:
    "The results files as (path, record): those with provenance, those without"
    traced, untraced = [], []
    for f in sorted(RESULTS.glob('*.json')):
        rec = json.loads(f.read_text())
        (traced if provenance_of(rec) else untraced).append((f, rec))
    return traced, untraced


def rows() -> list:
    "Every traced claim: {'file', 'claim', 'value', 'commit'}"
    return [{'file': f.name, 'commit': commit, **c} for f, rec in results()[0] for commit in [commit_of(rec)] for c in claims_of(script_of(rec['command']), rec)]


def render() -> str:
    traced, untraced = results()
    out = ["<!-- generated from benchmarks/results/ by tools/make_results.py: edit the results or the scripts' claims(), not this file -->",
           '', '# Results ledger', '',
           "Every number tba_kit reports, and where it came from. Each traced results file below names the command that made "
           "it, the git commit of the code that made its numbers (its runs' commits where it kept their records; `+changes`: the "
           "tree had uncommitted changes), the machine and the date; its "
           "rows are its claims, each with its number (a median with its 95% interval over seeds and problems where there is "
           "one). The README's numbers come from these rows.", '',
           f'## Traced results ({len(traced)} files)']
    for f, rec in traced:
        out += ['', f"### [{f.name}](results/{f.name})", '', f"`{rec['command']}`", '',
                f"commit {commit_of(rec)} · {of_runs(rec, machine_of)} · {of_runs(rec, versions_of)} · {date_of(rec)}", '',
                *table(claims_of(script_of(rec['command']), rec))]
    out += ['', f'## Results without provenance ({len(untraced)} files)', '',
            "Written before the benchmarks recorded their command, commit and machine: their numbers are not traced claims, "
            "and the README does not cite them. Rerun the script to trace one.", '',
            '| results file | script | what it holds |', '|---|---|---|']
    for f, rec in untraced:
        script = next((s.name for s in sorted((ROOT / 'benchmarks').glob('*.py'), key=lambda s: -len(s.stem)) if f.stem.startswith(s.stem)), '?')
        note = rec.get('provenance', {}).get('runs_note', '') if isinstance(rec, dict) else ''
        keys = ', '.join(list(rec)[:6]) if isinstance(rec, dict) else type(rec).__name__
        out.append(f"| [{f.name}](results/{f.name}) | {script} | {cell(note or keys)} |")
    return '\n'.join(out) + '\n'


def write_or_check(path: Path, text: str, source: str, tool: str):
    "Write `text` to `path`, or with --check fail if `path` differs from it (CI)"
    if '--check' in sys.argv:
        if not path.exists() or path.read_text() != text:
            sys.exit(f"{path.relative_to(ROOT)} is out of date with {source}: run `python {tool}` and commit")
        print(f'{path.relative_to(ROOT)} is up to date')
    else:
        path.write_text(text)
        print(f'wrote {path}')


def main(): write_or_check(LEDGER, render(), 'benchmarks/results/', 'tools/make_results.py')


if __name__ == '__main__':
    main()
