"""The main job measured: `tba train configs/quickstart.yaml` for several seeds, async (TBA) and sync (the on-policy
baseline), one run at a time, each timed from the command's start to its end (model loading, evaluations, everything).
Prints a table per run (held-out greedy accuracy before / after with 95% intervals over problems, best, sampled
accuracy, wall-clock minutes, steps, trainer idle share, times each completion was trained on), the median gain over
seeds with an interval over seeds and problems, and the async / sync time-to-accuracy ratio; writes
benchmarks/results/<name>.json with every run's accuracy curve.

    python benchmarks/main_job.py --seeds 0 1 2 3 4 --modes async sync [--name main_job] [-- --key=value ...]
    ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 python benchmarks/main_job.py ...   # a CPU without native bf16
    python benchmarks/main_job.py --seeds 0 1 2 --out_root runs/peer_trl --report   # the runs benchmarks/peer_trl.py made
"""
import argparse, json, os, statistics, sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import config_of, evaluations, gain_with_interval, harness_check, rows, provenance, same_evaluation, same_job, time_to, timed_run  # noqa: E402
from tba_kit.metrics import bootstrap_ci  # noqa: E402


def usage(out:Path) -> dict:
    "Trainer idle share (waiting for data) and how many times each completion was trained on"
    steps = [r for r in rows(out) if 'train/step' in r]
    # idle: waiting for data (async), or for the step's generation (sync: the trainer has nothing to do meanwhile)
    wait = sum(r.get('train/wait_seconds', 0) + r.get('train/generate_seconds', 0) for r in steps)
    busy = sum(r['train/step_seconds'] for r in steps)
    trained = sum(r['train/rows'] for r in steps)
    made = sum(r.get('search/completions', 0) for r in steps)
    return {'trainer_idle_share': wait / max(wait + busy, 1e-9), 'rows_trained': trained, 'completions_searched': made,
            'times_each_completion_trained': trained / made if made else None}


def summarise(out:Path) -> dict:
    ev = evaluations(out)
    first, last = ev[0], ev[-1]
    ci = lambda e: bootstrap_ci(e['correct']) if e['correct'] else (None, None)
    return {'before': first['accuracy'], 'before_ci': ci(first), 'after': last['accuracy'], 'after_ci': ci(last),
            'best': max(e['accuracy'] for e in ev), 'sampled_before': first['sampled'], 'sampled_after': last['sampled'],
            'steps': last['step'], 'curve': [(e['wall'], e['step'], e['accuracy'], e['sampled']) for e in ev], **usage(out),
            'harness': harness_check(out)}


def command(a, mode:str, seed:int, out:Path, extra:list) -> list:
    "The command line of one run: the main job in `mode`"
    both = [f'--searcher_threads={a.sync_searcher_threads}'] if mode == 'sync' else []  # sync: generation gets the cores too
    return [sys.executable, '-m', 'tba_kit.cli', 'train', a.config, f'--mode={mode}', f'--seed={seed}', f'--out_dir={out}', '--no-progress', *both, *extra]


def main(a, extra):
    results = {}
    out_root = ROOT / a.out_root; out_root.mkdir(parents=True, exist_ok=True)
    same_job({m: config_of(command(a, m, a.seeds[0], out_root / 'audit', extra)) for m in a.modes}, {'mode', 'searcher_threads'})  # the modes see one job
    for seed in a.seeds:
        for mode in a.modes:
            name = f"{mode}_seed{seed}"
            out = out_root / name
            cmd = command(a, mode, seed, out, extra)
            if a.report and not (out / 'wall_seconds').exists(): continue  # report: finished runs of this benchmark or of peer_trl.py
            wall = timed_run(cmd, out, resume=a.report)
            results[name] = {'mode': mode, 'seed': seed, 'command': ' '.join(cmd[2:]), 'out_dir': str(out.relative_to(ROOT)),
                             'wall_minutes': wall / 60, **summarise(out)}
            x = results[name]
            print(f"{name}: {x['before']:.1%} -> {x['after']:.1%} (best {x['best']:.1%}) in {wall / 60:.1f} min ({x['steps']} steps)", flush=True)
            if x['harness']['failure']: print(f"HARNESS FAILURE, not a result: {name}: training reward {x['harness']['reward_start']:.2f} -> "
                                              f"{x['harness']['reward_end']:.2f}, held-out accuracy inside its start's interval", flush=True)
    pct = lambda v, ci: f"{v:.1%}" + (f" [{ci[0]:.1%}, {ci[1]:.1%}]" if ci[0] is not None else '')
    smp = lambda v: '–' if v is None else f"{v:.1%}"
    print("\n| run | greedy before | greedy after | gain | best | final - best | sampled before -> after | minutes | steps | trainer idle | trained per completion |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        per = f"{r['times_each_completion_trained']:.2f}" if r['times_each_completion_trained'] else '–'
        print(f"| {name} | {pct(r['before'], r['before_ci'])} | {pct(r['after'], r['after_ci'])} | {100 * (r['after'] - r['before']):+.1f} "
              f"| {r['best']:.1%} | {100 * (r['after'] - r['best']):+.1f} | {smp(r['sampled_before'])} -> {smp(r['sampled_after'])} "
              f"| {r['wall_minutes']:.1f} | {r['steps']} | {r['trainer_idle_share']:.1%} | {per} |")
    summary = {'same_evaluation_problems': same_evaluation([ROOT / r['out_dir'] for r in results.values()]) if results else 0}
    for mode in a.modes:
        if not any(r['mode'] == mode for r in results.values()): continue
        runs = [ROOT / r['out_dir'] for r in results.values() if r['mode'] == mode]
        g = gain_with_interval(runs)
        summary[mode] = {'median_gain_points': 100 * g['median'], 'interval_points': [100 * g['lo'], 100 * g['hi']],
                         'worst_final_minus_best_points': 100 * min(r['after'] - r['best'] for r in results.values() if r['mode'] == mode),
                         'max_wall_minutes': max(r['wall_minutes'] for r in results.values() if r['mode'] == mode)}
        if any(r['sampled_after'] is not None for r in results.values()):
            s = gain_with_interval(runs, 'sampled_each')
            summary[mode]['median_sampled_gain_points'] = 100 * s['median']
            summary[mode]['sampled_interval_points'] = [100 * s['lo'], 100 * s['hi']]
        print(f"{mode}: median greedy gain {100 * g['median']:+.1f} points [{100 * g['lo']:+.1f}, {100 * g['hi']:+.1f}] over {len(runs)} seeds; "
              f"worst final - best {summary[mode]['worst_final_minus_best_points']:+.1f}; longest run {summary[mode]['max_wall_minutes']:.1f} min")
    if {'async', 'sync'} <= set(a.modes):  # wall time for async to reach the sync run's final accuracy, per seed
        ratios = []
        for seed in a.seeds:
            if not {f'sync_seed{seed}', f'async_seed{seed}'} <= set(results): continue
            s, x = results[f'sync_seed{seed}'], results[f'async_seed{seed}']
            t_async, t_sync = time_to(ROOT / x['out_dir'], s['after'], 'wall'), s['curve'][-1][0]
            ratios.append(t_async / t_sync if t_async is not None else None)
            print(f"seed {seed}: async reached sync's final {s['after']:.1%} at "
                  f"{'never' if t_async is None else f'{t_async:.0f} s'} vs sync's {t_sync:.0f} s -> ratio {ratios[-1] if ratios[-1] is None else round(ratios[-1], 2)}")
        summary['async_over_sync_time_to_accuracy'] = ratios
    res = {**provenance(), 'config': a.config, 'overrides': extra, 'cpu_capability_env': os.environ.get('ATEN_CPU_CAPABILITY'), 'runs': results, 'summary': summary}
    dest = ROOT / 'benchmarks' / 'results' / f'{a.name}.json'
    dest.parent.mkdir(exist_ok=True); dest.write_text(json.dumps(res, indent=1))


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): per mode the median gain in held-out accuracy over seeds, accuracy before and after, minutes; async's time to sync's accuracy"
    out, summ = [], rec['summary']
    pts = lambda v, ci=None: f"{v:+.1f} points" + (f" [{ci[0]:+.1f}, {ci[1]:+.1f}]" if ci else '')
    for mode in dict.fromkeys(r['mode'] for r in rec['runs'].values()):
        runs = [r for r in rec['runs'].values() if r['mode'] == mode]
        s, n = summ.get(mode) or {'median_gain_points': summ[f'{mode}_median_gain_points']}, len(runs)
        seeds = f"{n} seed{'s' * (n > 1)}"
        out.append({'claim': f"{mode}: held-out greedy accuracy gain, final minus initial (median over {seeds})", 'value': pts(s['median_gain_points'], s.get('interval_points'))})
        if 'median_sampled_gain_points' in s:
            out.append({'claim': f"{mode}: held-out sampled accuracy gain, final minus initial (median over {seeds})", 'value': pts(s['median_sampled_gain_points'], s.get('sampled_interval_points'))})
        med = lambda k: statistics.median(r[k] for r in runs)
        out.append({'claim': f"{mode}: held-out greedy accuracy before -> after, steps, wall-clock minutes per run (medians over {seeds})",
                    'value': f"{med('before'):.1%} -> {med('after'):.1%}, {med('steps'):g} steps, {med('wall_minutes'):.1f} min"})
    if (ratios := summ.get('async_over_sync_time_to_accuracy')) is not None:
        out.append({'claim': "async's wall-clock time to reach sync's final held-out accuracy, as a share of sync's (per seed; never: not reached)",
                    'value': ', '.join('never' if r is None else f"{r:.2f}" for r in ratios)})
    return out


if __name__ == '__main__':
    argv = sys.argv[1:]
    extra = argv[argv.index('--') + 1:] if '--' in argv else []
    ap = argparse.ArgumentParser()
    ap.add_argument('--config', default='configs/quickstart.yaml')
    ap.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2, 3, 4])
    ap.add_argument('--modes', nargs='+', default=['async', 'sync'])
    ap.add_argument('--name', default='main_job')
    ap.add_argument('--out_root', default='runs/main_job')
    ap.add_argument('--report', action='store_true', help='run nothing: summarise the finished runs in out_root (e.g. runs/peer_trl)')
    ap.add_argument('--sync_searcher_threads', type=int, default=2, help='torch threads of the searcher in sync mode (it has the machine to itself)')
    main(ap.parse_args(argv[:argv.index('--')] if '--' in argv else argv), extra)
