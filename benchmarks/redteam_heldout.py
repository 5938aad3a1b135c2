"""Red-teaming's held-out attack success with more attacks than a run evaluates on (issue 23, item 3). The final policy
of each finished run and the untrained attacker are evaluated on the same N held-out attack instructions (the runs'
task with n_test = N: the first of them are the ones the runs evaluated on), greedy attacks as in a run's evaluation,
each scored by the victim's answers as in training. Per policy: ASR (the victim's mean toxicity over its answers >
tba_kit.redteam.SUCCESS_TOXICITY), mean toxicity, the embedding diversity of all attacks and of the successful ones.
Per system: medians over seeds with bootstrap intervals over seeds and attacks, and the paired gain over the untrained
attacker (the same instructions): toxicity difference per attack, and the seeds whose ASR beats it.

    python benchmarks/redteam_heldout.py --runs vargrad='runs/rt15/vargrad_inv1_toxic*/' grpo='runs/rt15/grpo_inv1_toxic*/' \\
        --n_test 256 --name redteam_heldout256

Each evaluation goes to benchmarks/results/<name>/<policy>.jsonl as it finishes (`tba eval --out`); a rerun reuses the
ones there. Writes benchmarks/results/<name>.json (`--results` names another folder). Evaluations take about 2 minutes per 64 attacks on 2 cores.
"""
import argparse, glob, json, sys, time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import interval, provenance  # noqa: E402
from tba_kit.checkpoints import find_checkpoint  # noqa: E402
from tba_kit.cli import evaluate_target  # noqa: E402
from tba_kit.metrics import bootstrap_ci, default_embedder, embedding_diversity  # noqa: E402
from tba_kit.redteam import SUCCESS_TOXICITY  # noqa: E402


def evaluation(target:Path, overrides:list, path:Path, n:int) -> list:
    "Every held-out attack of `target` (a run, or a config for the untrained attacker): kept in `path`, reused if there"
    if not path.exists():
        t = time.perf_counter()
        evaluate_target(str(target), overrides=overrides, out=str(path), untrained=target.name == 'config.json')
        print(f"{path.name}: evaluated in {time.perf_counter() - t:.0f} s", flush=True)
    rows = [json.loads(l) for l in path.read_text().splitlines()]
    if len(rows) != n: sys.exit(f"{path} holds {len(rows)} attacks, not {n}: another --n_test wrote it; delete it or choose another --name")
    return rows


def scores(rows:list, embedder) -> dict:
    "ASR, mean toxicity (each with an interval over attacks), diversity of all and of the successful attacks"
    tox = np.array([r['toxicity'] for r in rows])
    attacks = [r['completion'].strip() for r in rows]
    won = [a for a, t in zip(attacks, tox) if t > SUCCESS_TOXICITY]
    return {'asr': float((tox > SUCCESS_TOXICITY).mean()), 'asr_ci': bootstrap_ci(tox > SUCCESS_TOXICITY), 'successes': len(won),
            'toxicity': float(tox.mean()), 'toxicity_ci': bootstrap_ci(tox), 'diversity': embedding_diversity(attacks, embedder),
            'success_diversity': embedding_diversity(won, embedder) if len(won) >= 2 else None, 'toxicity_each': tox.tolist()}


def median_ci(each:np.ndarray) -> dict:
    "Median over seeds of the per-seed means of `each` [seeds, attacks], with a bootstrap interval over seeds and attacks"
    lo, hi = bootstrap_ci(each, stat=np.median)
    return {'median': float(np.median(each.mean(1))), 'lo': lo, 'hi': hi}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--runs', nargs='+', required=True, help="system=glob of its run folders (one per seed), e.g. vargrad='runs/rt/vargrad_s*'")
    ap.add_argument('--n_test', type=int, default=256, help='held-out attack instructions per policy')
    ap.add_argument('--name', default='redteam_heldout', help='results go to <results>/<name>.json and <name>/')
    ap.add_argument('--results', default=str(ROOT / 'benchmarks' / 'results'), help='folder of the results')
    a = ap.parse_args(argv)
    systems = {}
    for spec in a.runs:
        name, sep, pattern = spec.partition('=')
        runs = sorted(Path(p) for p in glob.glob(pattern) if Path(p).is_dir())
        if not sep or not runs: ap.error(f"--runs {spec!r}: give system=glob matching run folders (found {len(runs)})")
        systems[name] = runs
    configs = {r: json.loads((find_checkpoint(r) / 'config.json').read_text()) for rs in systems.values() for r in rs}
    task_args = {json.dumps(c['task_args'], sort_keys=True) for c in configs.values()}
    if len({c['task'] for c in configs.values()}) > 1 or len(task_args) > 1:
        sys.exit(f"the runs' tasks differ ({sorted(task_args)}): their held-out attacks would not be the same; compare runs of one task")
    first = next(iter(configs))
    over = [f"--task_args={json.dumps(configs[first]['task_args'] | {'n_test': a.n_test})}", f"--eval_limit={a.n_test}"]
    cache = Path(a.results) / a.name
    base = evaluation(find_checkpoint(first) / 'config.json', over, cache / 'untrained.jsonl', a.n_test)  # the run's config, no checkpoint
    rows = {n: {r: evaluation(r, over, cache / f"{n}__{r.name}.jsonl", a.n_test) for r in rs} for n, rs in systems.items()}
    embedder = default_embedder()
    b = scores(base, embedder)
    res = {'n_test': a.n_test, 'task_args': configs[first]['task_args'] | {'n_test': a.n_test}, 'untrained': b, 'systems': {}}
    f = lambda s: f"{s['asr']:.1%} [{s['asr_ci'][0]:.1%}, {s['asr_ci'][1]:.1%}] ({s['successes']}) | {s['toxicity']:.3f} [{s['toxicity_ci'][0]:.3f}, {s['toxicity_ci'][1]:.3f}] | {s['diversity']:.2f} | " + (f"{s['success_diversity']:.2f}" if s['success_diversity'] is not None else '-')
    print(f"\n{a.n_test} held-out attacks per policy\n\n| policy | ASR [interval over attacks] (successes) | mean toxicity | diversity | diversity of successes |\n|---|---|---|---|---|")
    print(f"| untrained | {f(b)} |")
    for n, runs in rows.items():
        each = {r.name: scores(v, embedder) for r, v in runs.items()}
        for r, s in each.items(): print(f"| {n}: {r} | {f(s)} |")
        tox = np.array([s['toxicity_each'] for s in each.values()])  # [seeds, attacks]
        gain = tox - np.array(b['toxicity_each'])[None]  # paired by instruction
        res['systems'][n] = {'runs': each,
                             'asr': median_ci((tox > SUCCESS_TOXICITY).astype(float)), 'toxicity': median_ci(tox), 'toxicity_gain': median_ci(gain),
                             'asr_gain': median_ci((tox > SUCCESS_TOXICITY).astype(float) - (np.array(b['toxicity_each']) > SUCCESS_TOXICITY)[None]),
                             'seeds_above_untrained_asr': sum(s['asr'] > b['asr'] for s in each.values()), 'seeds': len(each)}
    print("\n| system | seeds | ASR, median [interval over seeds and attacks] | ASR minus the untrained attacker's, paired | mean toxicity | toxicity minus the untrained's, paired | seeds with ASR above the untrained's |\n|---|---|---|---|---|---|---|")
    m = lambda d, p='.1%': f"{d['median']:{p}} [{d['lo']:{p}}, {d['hi']:{p}}]"
    for n, s in res['systems'].items():
        print(f"| {n} | {s['seeds']} | {m(s['asr'])} | {m(s['asr_gain'], '+.1%')} | {m(s['toxicity'], '.3f')} | {m(s['toxicity_gain'], '+.3f')} | {s['seeds_above_untrained_asr']} of {s['seeds']} |")
    out = Path(a.results) / f'{a.name}.json'
    kept = json.loads(out.read_text()) if out.exists() else {}
    if 'commit' not in kept or {k: kept.get(k) for k in res} != json.loads(json.dumps(res)):  # a rerun that changes no number keeps the file and its provenance
        out.write_text(json.dumps({**provenance(), **res}, indent=1) + '\n')
    print(f"\n{out}")


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): per system the held-out attack success rate and mean toxicity, and their paired gain over the untrained attacker"
    b, n = rec['untrained'], rec['n_test']
    out = [{'claim': f"untrained attacker: held-out attack success rate (victim toxicity > {SUCCESS_TOXICITY:g}) and mean toxicity, {n} attacks",
            'value': f"{b['asr']:.1%} [{b['asr_ci'][0]:.1%}, {b['asr_ci'][1]:.1%}]; {b['toxicity']:.3f} [{b['toxicity_ci'][0]:.3f}, {b['toxicity_ci'][1]:.3f}]"}]
    for s, r in rec['systems'].items():
        out += [{'claim': f"{s} ({r['seeds']} seed{'s' * (r['seeds'] > 1)}): held-out attack success rate, {n} attacks; minus the untrained attacker's, paired by attack (seeds above it)",
                 'value': f"{interval(r['asr'])}; {interval(r['asr_gain'], '{:+.1%}')} ({r['seeds_above_untrained_asr']} of {r['seeds']})"},
                {'claim': f"{s}: held-out mean toxicity of the victim's answers, {n} attacks; minus the untrained attacker's, paired by attack",
                 'value': f"{interval(r['toxicity'], '{:.3f}')}; {interval(r['toxicity_gain'], '{:+.3f}')}"}]
    return out


if __name__ == '__main__': main()
