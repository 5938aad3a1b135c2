"""Why does the main job's async default learn less per step than an on-policy run? The same seeds, each arm trained for
40 steps at a constant lr and evaluated on the 500 held-out problems every 10 steps (`eval_every`), one run at a time:

    trl_dapo       TRL's GRPOTrainer, its default loss (dapo), on-policy       (benchmarks/peer_trl.py, tba_kit's prompt ids)
    sync_dapo      tba_kit sync, loss dapo (TRL's, equal to round-off)         the same algorithm as trl_dapo
    sync_vargrad   tba_kit sync, VarGrad                                        the objective's part of the gap
    async_vargrad  tba_kit async, VarGrad: the main job at a constant lr        asynchrony's part
    async_dapo     tba_kit async, dapo                                          asynchrony with TRL's loss

plus any lever given as 'label=kind --key=value ...' (kinds as in peer_trl.py). Prints held-out accuracy at equal
steps (median over seeds, intervals over seeds and problems) and, per arm, what the trainer saw: seconds per step,
data staleness, how many times each completion was trained, recency slots per batch and gradient norms.

    python benchmarks/per_step.py --seeds 0 1 [--arms ...] [--steps 40] [--name per_step]
    python benchmarks/per_step.py --seeds 0 1 --report      # the kept records only (benchmarks/results/per_step_runs/)
"""
import argparse, json, sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import provenance, rel, rows, system_claims  # noqa: E402
import peer_trl  # noqa: E402

ARMS = ['trl_dapo=trl', 'sync_dapo=sync --objective=dapo', 'sync_vargrad=sync', 'async_vargrad=async', 'async_dapo=async --objective=dapo']


def usage(run) -> dict:
    "What the trainer saw over a run: medians of step seconds and gradient norm, mean staleness, times each completion was trained, recency slots"
    steps = [r for r in rows(run) if 'train/step' in r]
    made = sum(r.get('search/completions', 0) for r in steps)
    col = lambda k: [r[k] for r in steps if k in r]
    return {'step_seconds': float(np.median(col('train/step_seconds'))), 'staleness': float(np.mean(col('train/staleness'))) if col('train/staleness') else 0.,
            'trained_per_completion': sum(col('train/rows')) / made if made else None,
            'recent_slots': float(np.mean(col('sample/recent_slots'))) if col('sample/recent_slots') else None,
            'grad_norm': float(np.median(col('train/grad_norm'))) if col('train/grad_norm') else None,
            'reward_by_quarter': [float(np.mean(x)) for x in np.array_split(col('reward/mean'), 4) if len(x)]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--config', default='configs/quickstart.yaml')
    ap.add_argument('--seeds', type=int, nargs='+', default=[0, 1])
    ap.add_argument('--arms', nargs='+', default=ARMS, help="'label=kind --key=value ...' as peer_trl.py's --systems")
    ap.add_argument('--steps', type=int, default=40)
    ap.add_argument('--eval_every', type=int, default=10)
    ap.add_argument('--name', default='per_step', help='the runs\' records are in <results>/<name>_runs/')
    ap.add_argument('--save_as', default=None, help='write the analysis to <results>/<this>.json and .svg (default: the name)')
    ap.add_argument('--results', default=str(ROOT / 'benchmarks' / 'results'), help="where the results, the figure and the runs' records go")
    ap.add_argument('--out_root', default='runs/per_step')
    ap.add_argument('--resume', action='store_true', help='keep the runs whose records exist')
    ap.add_argument('--report', action='store_true', help='run nothing: analyse the kept records')
    a, extra = ap.parse_known_args(argv)
    a.trl_bf16 = False
    extra = ['--lr_schedule=constant', '--lr_schedule_by=steps', f'--steps={a.steps}', f'--eval_every={a.eval_every}', '--eval_samples=0',
             '--checkpoint_every=0', '--time_limit=60', *extra]  # equal steps: the clock never stops a run
    arms = [peer_trl.parse_system(s) for s in a.arms]
    peer_trl.audit(arms, a.config, extra)
    runs = peer_trl.run_all(arms, a.seeds, a, extra)
    if not runs: sys.exit(f"no finished runs in {a.results}/{a.name}_runs")
    res = peer_trl.analyse(runs, {s: [json.loads(r.read_text())['wall_seconds'] for r in fs] for s, fs in runs.items()}, Path(a.results) / f'{a.save_as or a.name}.svg')
    peer_trl.report(res)
    res['usage'] = {s: [usage(r) for r in fs] for s, fs in runs.items()}
    print("\n| arm | s / step | staleness (versions) | times each completion trained | recency slots / batch | grad norm (median) | training reward by quarter |\n|---|---|---|---|---|---|---|")
    for s, us in res['usage'].items():
        f = lambda k, fmt: ', '.join('–' if u[k] is None else format(u[k], fmt) for u in us)
        print(f"| {s} | {f('step_seconds', '.1f')} | {f('staleness', '.2f')} | {f('trained_per_completion', '.2f')} | {f('recent_slots', '.2f')} | "
              f"{f('grad_norm', '.3g')} | {'; '.join(' '.join(f'{x:.2f}' for x in u['reward_by_quarter']) for u in us)} |")
    (Path(a.results) / f'{a.save_as or a.name}.json').write_text(json.dumps({**provenance(), 'config': a.config, 'overrides': extra, 'seeds': a.seeds,
        'arms': {s: {'kind': k, 'overrides': o} for s, k, o in arms}, 'runs': {s: [rel(f) for f in fs] for s, fs in runs.items()},
        'results': res}, indent=1))
    return res


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): each arm's final and step-30 held-out accuracy"
    return system_claims(rec)


if __name__ == '__main__': main()
