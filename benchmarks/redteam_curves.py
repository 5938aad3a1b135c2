"""Red-teaming curves from finished runs (issue 23, item 3): for each system, at every held-out evaluation, the attack
success rate (ASR: the victim's mean toxicity over its answers > tba_kit.redteam.SUCCESS_TOXICITY), the mean toxicity,
the embedding diversity of all the attacks and of the successful ones (2 or more), and the training reward of the steps
before it. The medians over seeds are drawn against training steps, and the final evaluation gets a bootstrap interval
over seeds and attacks.

    tba train configs/redteam.yaml --seed=S --out_dir=runs/rt/vargrad_sS ...     # the runs (see the README)
    python benchmarks/redteam_curves.py --runs vargrad='runs/rt/vargrad_s*' grpo='runs/rt/grpo_s*' --name redteam_curves

Each attack's toxicity comes from the run's evals/step_*.jsonl (the task writes it there). Diversity is computed here,
with the task's embedder (all-MiniLM-L6-v2), so runs that evaluated without it (task_args diversity: false, on a
machine without the package) get it too. Writes benchmarks/results/<name>.json and <name>.svg (mean toxicity against steps:
ASR is too often 0 to draw).
"""
import argparse, glob, json, sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import interval, lines_svg, provenance, rows  # noqa: E402
from tba_kit.metrics import bootstrap_ci, default_embedder, embedding_diversity  # noqa: E402
from tba_kit.redteam import SUCCESS_TOXICITY  # noqa: E402


def curve(run:Path, embedder) -> list:
    "Every evaluation of a red-team run: step, training minutes, ASR, mean toxicity, diversity of all / successful attacks, training reward before it"
    out, rewards = [], []  # rewards: the training steps' mean rewards since the last evaluation
    for r in rows(run):
        if 'reward/mean' in r: rewards.append(r['reward/mean'])
        if 'eval/asr' not in r: continue
        per = [json.loads(l) for l in open(run / 'evals' / f"step_{r['step']:06d}.jsonl")]
        if any('toxicity' not in p for p in per): sys.exit(f"{run}: evals/step_{r['step']:06d}.jsonl has no per-attack toxicity (a run from before tba_kit wrote it)")
        tox, attacks = [p['toxicity'] for p in per], [p['completion'].strip() for p in per]
        won = [a for a, t in zip(attacks, tox) if t > SUCCESS_TOXICITY]
        out.append({'step': r['step'], 'train_minutes': r['time/train_seconds'] / 60, 'asr': len(won) / len(tox),
                    'toxicity': float(np.mean(tox)), 'toxicity_each': tox, 'diversity': embedding_diversity(attacks, embedder),
                    'success_diversity': embedding_diversity(won, embedder) if len(won) >= 2 else None,
                    'train_reward': float(np.mean(rewards)) if rewards else None})
        rewards = []
    return out


def first_reward(curve:list) -> float:
    "The training reward of the steps before the first evaluation that follows training"
    return next((e['train_reward'] for e in curve if e['train_reward'] is not None), float('nan'))


def final(curves:list, key:str) -> dict:
    "Median over seeds of the last evaluation's per-attack values (ASR: toxicity > SUCCESS_TOXICITY), with a bootstrap interval over seeds and attacks"
    each = np.array([[float(t > SUCCESS_TOXICITY) if key == 'asr' else t for t in c[-1]['toxicity_each']] for c in curves])  # [seeds, attacks]
    lo, hi = bootstrap_ci(each, stat=np.median)
    return {'median': float(np.median(each.mean(1))), 'lo': lo, 'hi': hi, 'per_seed': each.mean(1).tolist()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--runs', nargs='+', required=True, help="system=glob of its run folders (one per seed), e.g. vargrad='runs/rt/vargrad_s*'")
    ap.add_argument('--name', default='redteam_curves', help='results go to benchmarks/results/<name>.json and .svg')
    ap.add_argument('--note', default='', help='where and how the runs ran (device, settings), kept in the JSON')
    a = ap.parse_args()
    systems = {}
    for spec in a.runs:
        name, sep, pattern = spec.partition('=')
        runs = sorted(Path(p) for p in glob.glob(pattern) if Path(p).is_dir())  # a run's log beside its folder is not a run
        if not sep or not runs: ap.error(f"--runs {spec!r}: give system=glob matching run folders (found {len(runs)})")
        systems[name] = runs
    embedder = default_embedder()
    res = {n: {'runs': [str(r) for r in runs], 'curves': [curve(r, embedder) for r in runs]} for n, runs in systems.items()}
    print('| system | seeds | evaluations at steps | held-out ASR, final | mean toxicity, first -> final | diversity, first -> final | '
          'diversity of successful attacks, final | training reward, first -> last interval |')
    print('|---|---|---|---|---|---|---|---|')
    for n, r in res.items():
        cs = r['curves']
        r['final_asr'], r['final_toxicity'] = final(cs, 'asr'), final(cs, 'toxicity')
        med = lambda i, k: np.median([c[i][k] for c in cs if c[i][k] is not None]) if any(c[i][k] is not None for c in cs) else float('nan')
        f, t = r['final_asr'], r['final_toxicity']
        won = [c[-1]['success_diversity'] for c in cs if c[-1]['success_diversity'] is not None]
        print(f"| {n} | {len(cs)} | {cs[0][0]['step']}..{cs[0][-1]['step']} | {f['median']:.1%} [{f['lo']:.1%}, {f['hi']:.1%}] "
              f"(per seed {', '.join(f'{v:.1%}' for v in f['per_seed'])}) | {med(0, 'toxicity'):.3f} -> {t['median']:.3f} [{t['lo']:.3f}, {t['hi']:.3f}] | "
              f"{med(0, 'diversity'):.2f} -> {med(-1, 'diversity'):.2f} | "
              f"{', '.join(f'{v:.2f}' for v in won) or 'no seed has 2 successes'} | {np.median([first_reward(c) for c in cs]):.2f} -> {med(-1, 'train_reward'):.2f} |")
    print('\n| system | seed | held-out ASR, final (best evaluation) | mean toxicity, final (best) | diversity, final | training reward, first -> last interval |')
    print('|---|---|---|---|---|---|')
    for n, r in res.items():
        for run, c in zip(r['runs'], r['curves']):
            print(f"| {n} | {Path(run).name} | {c[-1]['asr']:.1%} ({max(e['asr'] for e in c):.1%}) | {c[-1]['toxicity']:.3f} ({max(e['toxicity'] for e in c):.3f}) | "
                  f"{c[-1]['diversity']:.2f} | {first_reward(c):.2f} -> {c[-1]['train_reward'] if c[-1]['train_reward'] is not None else float('nan'):.2f} |")
    print('\nper evaluation (median over seeds): step: ASR / mean toxicity')
    for n, r in res.items():
        cs = r['curves']
        print(f"{n}: " + '; '.join(f"{e['step']}: {np.median([c[i]['asr'] for c in cs]):.1%} / {np.median([c[i]['toxicity'] for c in cs]):.3f}"
                                   for i, e in enumerate(cs[0]) if all(len(c) > i for c in cs)))
    out = ROOT / 'benchmarks' / 'results'
    (out / f'{a.name}.json').write_text(json.dumps({**provenance(), 'note': a.note, 'systems': res}, indent=1) + '\n')
    curves = {n: [[(e['step'], e['toxicity']) for e in c] for c in r['curves']] for n, r in res.items()}
    lines_svg(curves, out / f'{a.name}.svg', 'training steps', 'held-out mean toxicity of the victim\'s answers', ytick='{:.2f}', ystep=0.02)
    print(f"\n{out / a.name}.json, .svg")


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): per system the held-out attack success rate and mean toxicity at the final evaluation, with the diversity of the attacks"
    out = []
    for n, r in rec['systems'].items():
        cs, seeds = r['curves'], f"{len(r['curves'])} seed{'s' * (len(r['curves']) > 1)}"
        lo, hi = min(c[-1]['step'] for c in cs), max(c[-1]['step'] for c in cs)
        out += [{'claim': f"{n} ({seeds}): held-out attack success rate (victim toxicity > {SUCCESS_TOXICITY:g}) at the final evaluation, step {lo}{f'-{hi}' if hi > lo else ''}",
                 'value': interval(r['final_asr'])},
                {'claim': f"{n}: held-out mean toxicity of the victim's answers, first -> final evaluation; diversity of the attacks, first -> final (medians over {seeds})",
                 'value': f"{np.median([c[0]['toxicity'] for c in cs]):.3f} -> {interval(r['final_toxicity'], '{:.3f}')}; "
                          f"{np.median([c[0]['diversity'] for c in cs]):.2f} -> {np.median([c[-1]['diversity'] for c in cs]):.2f}"}]
    return out


if __name__ == '__main__': main()
