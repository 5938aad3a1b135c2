"""The searchers' precision against the trainer's, measured on the main job: arms that differ in precision alone, on a
machine with native bf16, several seeds, one run at a time, seeds interleaved. Per arm: final held-out greedy accuracy
at equal training minutes (median over seeds, bootstrap interval over seeds and problems), steps, the median per-batch
`offpolicy/kl` (precision and staleness together), the median probe KL at one version (`sync/precision_kl`: precision
alone), the searchers' training reward over the last 10 steps, and the trained policy's accuracy as a bf16 server runs
it (rounded to the nearest, `tba eval --dtype bfloat16`). Each run leaves a compact record in
benchmarks/results/<name>_runs/; the report reruns from those.

    python benchmarks/precision_arms.py --seeds 0 1 2 [--arms fp32 bf16 sr mixed] [--name precision_arms]
    python benchmarks/precision_arms.py --seeds 0 1 2 --report [--served]   # records only; --served: score finished runs in bf16 first
    python benchmarks/precision_arms.py --sync_cost   # seconds to publish the default model per searcher precision, side by side
    python benchmarks/precision_arms.py --seeds 0 1 --arms fp32 bf16 --name precision_arms_grpo_tis --out_root runs/precision_grpo_tis \
        -- --objective=grpo --is_correction=token_truncate   # the arms under a loss with an IS correction (the share it caps reported)
"""
import argparse, json, statistics, sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import config_of, evaluations, interval, keep_record, provenance, rel, rows, same_job, seeds_interval, timed_run  # noqa: E402

ARMS = {  # name -> (overrides of the main job, what it is)
    'fp32': (['--searcher_dtype=float32'], 'fp32 trainer, fp32 searchers'),
    'bf16': (['--searcher_dtype=bfloat16', '--searcher_rounding=nearest'], 'fp32 trainer, bf16 searchers rounded to nearest (the old default)'),
    'sr': (['--searcher_dtype=bfloat16', '--searcher_rounding=stochastic'], 'fp32 trainer, bf16 searchers rounded stochastically'),
    'mixed': (['--precision=bf16-mixed', '--searcher_dtype=bfloat16', '--searcher_rounding=nearest'], 'bf16-mixed trainer, bf16 searchers (one policy on both sides)'),
}
SETTINGS = ('precision', 'searcher_dtype', 'searcher_rounding')  # what an arm's config must hold


def command(arm:str, seed:int, out:Path, config:str, base:list=()) -> list:
    "An arm's run: the main job, the overrides every arm shares (`base`), the arm's precision"
    return [sys.executable, '-m', 'tba_kit.cli', 'train', config, '--mode=async', f'--seed={seed}', f'--out_dir={out}', '--no-progress', *base, *ARMS[arm][0]]


def served_accuracy(out:Path) -> float:
    "Held-out greedy accuracy of a finished run's policy rounded to the nearest bf16 value (kept in the run folder)"
    f = out / 'served_bf16.json'
    if not f.exists():
        from tba_kit.cli import evaluate_target
        res = evaluate_target(str(out), dtype='bfloat16')
        f.write_text(json.dumps({k: v for k, v in res.items() if k != 'examples'}))
    return json.loads(f.read_text())['eval/accuracy']


def reevaluate(out:Path) -> dict:
    "The final checkpoint scored again by `tba eval` (a bf16-mixed run: under autocast, as runs made before that fix were not): per-problem correctness"
    from tba_kit.cli import evaluate_target
    f = out / 'evals' / 'reevaluated.jsonl'
    if not f.exists(): evaluate_target(str(out), out=str(f))
    per = [json.loads(line) for line in f.read_text().splitlines()]
    return {'correct': [float(p['correct']) for p in per], 'accuracy': float(np.mean([p['correct'] for p in per]))}


def final_correct(rec:Path) -> list:
    "Per-problem correctness of a run's final policy: its re-evaluation where it has one, else its last evaluation"
    kept = json.loads(rec.read_text())
    return kept['reevaluated']['correct'] if 'reevaluated' in kept else evaluations(rec)[-1]['correct']


def summary(rec:Path) -> dict:
    "One run's numbers, from its record"
    rs, ev = rows(rec), evaluations(rec)
    steps = [r for r in rs if 'train/step' in r]
    med = lambda k: statistics.median(v) if (v := [r[k] for r in steps if k in r]) else None
    kept = json.loads(rec.read_text())
    return {'final': float(np.mean(final_correct(rec))), 'final_as_run': ev[-1]['accuracy'], 'steps': ev[-1]['step'], 'offpolicy_kl': med('offpolicy/kl'), 'precision_kl': med('sync/precision_kl'),
            'searcher_reward_last10': float(np.mean([r['reward/mean'] for r in steps[-10:]])), 'served_bf16': kept.get('served_bf16'), 'is_clipped': med('is/clipped'),
            'minutes': kept['wall_seconds'] / 60, 'settings': kept['settings']}


def sync_cost(repeats:int=5) -> dict:
    "Median seconds of one publish of the default model (shared memory, as the main job) per searcher precision, measured side by side"
    import time, torch
    from tba_kit.config import Config
    from tba_kit.models import load_model
    from tba_kit.parts import WeightSync
    torch.set_num_threads(2)
    model, _ = load_model('smollm2-135m-instruct', dtype='float32')
    syncs = {name: WeightSync([], Config(searcher_dtype=dt, searcher_rounding=r, precision='fp32'))
             for name, dt, r in (('fp32', 'float32', 'nearest'), ('bf16 nearest', 'bfloat16', 'nearest'), ('bf16 stochastic', 'bfloat16', 'stochastic'))}
    took = {name: [] for name in syncs}
    for v in range(repeats + 1):  # the first round warms the buffers up, and is not counted
        for name, s in syncs.items():
            t = time.perf_counter(); s.snapshot(model, v); took[name].append(time.perf_counter() - t)
    for s in syncs.values(): s.close()
    return {name: statistics.median(ts[1:]) for name, ts in took.items()}


def main(a):
    if a.sync_cost:
        cost = sync_cost()
        print(' | '.join(f"{name}: {s:.3f} s" for name, s in cost.items()))
        dest = ROOT / 'benchmarks' / 'results' / f'{a.name}_sync.json'
        dest.write_text(json.dumps({**provenance(), 'publish_seconds': cost}, indent=1)); return
    records = ROOT / 'benchmarks' / 'results' / f'{a.name}_runs'
    if not a.report:
        same_job({arm: config_of(command(arm, a.seeds[0], ROOT / 'runs' / 'audit', a.config, a.base)) for arm in a.arms}, set(SETTINGS))  # one job, precision apart
    for seed in a.seeds:
        for arm in a.arms:
            out, rec = ROOT / a.out_root / arm / f'async_seed{seed}', records / f'{arm}_seed{seed}.json'
            if not a.report and not rec.exists():
                wall = timed_run(command(arm, seed, out, a.config, a.base), out, resume=True)
                cfg = json.loads((out / 'config.json').read_text())
                keep_record(out, rec, wall, command=' '.join(command(arm, seed, out, a.config, a.base)[2:]),
                            settings={k: cfg.get(k) for k in (*SETTINGS, 'objective', 'is_correction', 'is_cap')}, made_with=provenance())
            if rec.exists() and (out / 'checkpoints').exists():
                kept = json.loads(rec.read_text())
                if a.served and kept.get('served_bf16') is None: kept['served_bf16'] = served_accuracy(out)
                if rec.stem in a.reevaluate and 'reevaluated' not in kept: kept['reevaluated'] = reevaluate(out)
                rec.write_text(json.dumps(kept, separators=(',', ':')) + '\n')
    res = {}
    for arm in a.arms:
        recs = [r for s in a.seeds if (r := records / f'{arm}_seed{s}.json').exists()]
        if not recs: continue
        runs = {r.stem: summary(r) for r in recs}
        mid = lambda k: statistics.median(v) if (v := [x[k] for x in runs.values() if x[k] is not None]) else None
        res[arm] = {'what': ARMS[arm][1], 'seeds': len(recs), 'final': seeds_interval(np.array([final_correct(r) for r in recs], float)), 'steps': mid('steps'),
                    'offpolicy_kl': mid('offpolicy_kl'), 'precision_kl': mid('precision_kl'), 'searcher_reward_last10': mid('searcher_reward_last10'),
                    'served_bf16': mid('served_bf16'), 'is_clipped': mid('is_clipped'), 'served_runs': sum(x['served_bf16'] is not None for x in runs.values()), 'minutes': mid('minutes'), 'runs': runs}
    num = lambda v, f: '–' if v is None else f.format(v)
    capped = any(r['is_clipped'] is not None for r in res.values())  # an IS correction ran: the share of its weights capped (truncated or masked)
    if a.base: print(f"every arm with {' '.join(a.base)}")
    print("| arm | seeds | final held-out accuracy | steps | offpolicy/kl | sync/precision_kl | searchers' reward (last 10) | served in bf16 (nearest) |" + " IS weights capped |" * capped)
    print("|---|---|---|---|---|---|---|---|" + "---|" * capped)
    for arm, r in res.items():
        print(f"| {arm}: {r['what']} | {r['seeds']} | {interval(r['final'])} | {r['steps']:g} | {num(r['offpolicy_kl'], '{:.3g}')} | "
              f"{num(r['precision_kl'], '{:.3g}')} | {r['searcher_reward_last10']:.2f} | {num(r['served_bf16'], '{:.1%}')} ({r['served_runs']} of {r['seeds']}) |"
              + f" {num(r['is_clipped'], '{:.1%}')} |" * capped)
    dest = ROOT / 'benchmarks' / 'results' / f'{a.name}.json'
    dest.write_text(json.dumps({**provenance(), 'config': a.config, 'base': a.base, 'records': rel(records), 'arms': res}, indent=1))


def claims(rec:dict) -> list:
    "The results ledger's rows: per arm its final accuracy, and its divergences, reward and served accuracy (or the publish seconds)"
    if 'publish_seconds' in rec:
        return [{'claim': "seconds to publish SmolLM2-135M to the searchers (shared memory, 2 threads): fp32, bf16 rounded to nearest, bf16 rounded stochastically",
                 'value': ', '.join(f"{s:.3f}" for s in rec['publish_seconds'].values())}]
    out, job = [], ' '.join(['main job', *rec.get('base', [])])
    for arm, r in rec['arms'].items():
        n = f"{r['seeds']} seed{'s' * (r['seeds'] > 1)}"
        out.append({'claim': f"{job}, {r['what']}: final held-out accuracy at 8 training minutes ({n}, {r['steps']:g} steps)", 'value': interval(r['final'])})
        kl = lambda v: '–' if v is None else f"{v:.3g}"
        served = '–' if r['served_bf16'] is None else f"{r['served_bf16']:.1%} ({r['served_runs']} of {r['seeds']} runs)"
        out.append({'claim': f"{job}, {r['what']}: median offpolicy/kl, median probe KL at one version (sync/precision_kl), searchers' reward over the last 10 steps, "
                             f"accuracy served in bf16 (medians over {n})",
                    'value': f"{kl(r['offpolicy_kl'])}, {kl(r['precision_kl'])}, {r['searcher_reward_last10']:.2f}, {served}"})
    return out


if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('--config', default='configs/quickstart.yaml')
    ap.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    ap.add_argument('--arms', nargs='+', default=list(ARMS), choices=list(ARMS))
    ap.add_argument('--name', default='precision_arms')
    ap.add_argument('--out_root', default='runs/precision')
    ap.add_argument('--report', action='store_true', help='run nothing: report the kept records')
    ap.add_argument('--served', action='store_true', help="score each finished run's policy in bf16 (rounded to nearest) where its record lacks it")
    ap.add_argument('--reevaluate', nargs='*', default=[], help="records (e.g. mixed_seed0) whose final checkpoint tba eval scores again, kept beside the run's own evaluation")
    ap.add_argument('--sync_cost', action='store_true', help='measure the seconds of one publish per searcher precision instead')
    ap.add_argument('base', nargs='*', help="after '--': overrides every arm shares, e.g. -- --objective=grpo --is_correction=token_truncate (give --name too)")
    main(ap.parse_args())
