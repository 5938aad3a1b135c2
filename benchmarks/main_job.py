"""The main job measured: `tba train configs/quickstart.yaml` for several seeds, async (TBA) and sync (the on-policy
baseline), one run at a time, each timed from the command's start to its end (model loading, evaluations, everything).
Prints a table (held-out greedy accuracy before / after, wall-clock minutes, steps, trainer idle share, times each
completion was trained on) and the async / sync time-to-accuracy ratio, and writes benchmarks/results/main_job.json
with every run's accuracy curve.

    python benchmarks/main_job.py --seeds 0 1 2 --modes async sync [--name main_job] [-- --key=value ...]
    ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 python benchmarks/main_job.py ...   # a CPU without native bf16
"""
import argparse, json, os, shutil, statistics, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def curve(out:Path) -> list:
    "(wall-clock seconds, step, accuracy) of every evaluation of a run"
    rows = [json.loads(l) for l in open(out / 'metrics.jsonl')]
    return [(r['time/seconds'], r['step'], r['eval/accuracy']) for r in rows if 'eval/accuracy' in r]


def usage(out:Path) -> dict:
    "Trainer idle share (waiting for data) and how many times each completion was trained on"
    rows = [json.loads(l) for l in open(out / 'metrics.jsonl')]
    steps = [r for r in rows if 'train/step' in r]
    # idle: waiting for data (async), or for the step's generation (sync: the trainer has nothing to do meanwhile)
    wait = sum(r.get('train/wait_seconds', 0) + r.get('train/generate_seconds', 0) for r in steps)
    busy = sum(r['train/step_seconds'] for r in steps)
    trained = sum(r['train/rows'] for r in steps)
    made = sum(r.get('search/completions', 0) for r in steps)
    return {'trainer_idle_share': wait / max(wait + busy, 1e-9), 'rows_trained': trained, 'completions_searched': made,
            'times_each_completion_trained': trained / made if made else None}


def first_time_at(c:list, acc:float) -> float|None:
    "Wall-clock seconds of the first evaluation at or above `acc`"
    return next((t for t, _, a in c if a >= acc - 1e-9), None)


def main(a, extra):
    results = {}
    out_root = Path(a.out_root); out_root.mkdir(parents=True, exist_ok=True)
    for seed in a.seeds:
        for mode in a.modes:
            name = f"{mode}_seed{seed}"
            out = out_root / name
            if out.exists(): shutil.rmtree(out)
            both = [f'--searcher_threads={a.sync_searcher_threads}'] if mode == 'sync' else []  # sync: generation gets the cores too
            cmd = [sys.executable, '-m', 'tba_kit.cli', 'train', a.config, f'--mode={mode}', f'--seed={seed}', f'--out_dir={out}', '--no-progress', *both, *extra]
            t = time.perf_counter()
            r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
            wall = time.perf_counter() - t
            if r.returncode != 0: sys.exit(f"{name} failed:\n{r.stderr[-3000:]}")
            c = curve(out)
            results[name] = {'mode': mode, 'command': ' '.join(cmd[2:]), 'seed': seed, 'wall_minutes': wall / 60, 'before': c[0][2], 'after': c[-1][2],
                             'steps': c[-1][1], 'curve': c, **usage(out)}
            print(f"{name}: {c[0][2]:.1%} -> {c[-1][2]:.1%} in {wall / 60:.1f} min ({c[-1][1]} steps)", flush=True)
    print(f"\n| run | accuracy before | after | gain | minutes | steps | trainer idle | trained per completion |\n|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        per = f"{r['times_each_completion_trained']:.2f}" if r['times_each_completion_trained'] else '–'
        print(f"| {name} | {r['before']:.1%} | {r['after']:.1%} | {100 * (r['after'] - r['before']):+.1f} | {r['wall_minutes']:.1f} | {r['steps']} "
              f"| {r['trainer_idle_share']:.1%} | {per} |")
    summary = {}
    for mode in a.modes:
        gains = [r['after'] - r['before'] for r in results.values() if r['mode'] == mode]
        summary[f'{mode}_median_gain_points'] = 100 * statistics.median(gains)
        print(f"{mode}: median gain {100 * statistics.median(gains):+.1f} points over {len(gains)} seeds")
    if {'async', 'sync'} <= set(a.modes):  # time for async to reach the sync run's final accuracy, per seed
        ratios = []
        for seed in a.seeds:
            s, x = results[f'sync_seed{seed}'], results[f'async_seed{seed}']
            t_async, t_sync = first_time_at(x['curve'], s['after']), s['curve'][-1][0]
            ratios.append(t_async / t_sync if t_async is not None else None)
            print(f"seed {seed}: async reached sync's final {s['after']:.1%} at "
                  f"{'never' if t_async is None else f'{t_async:.0f} s'} vs sync's {t_sync:.0f} s -> ratio {ratios[-1] if ratios[-1] is None else round(ratios[-1], 2)}")
        summary['async_over_sync_time_to_accuracy'] = ratios
    res = {'config': a.config, 'overrides': extra, 'cpu_capability_env': os.environ.get('ATEN_CPU_CAPABILITY'), 'runs': results, 'summary': summary}
    dest = ROOT / 'benchmarks' / 'results' / f'{a.name}.json'
    dest.parent.mkdir(exist_ok=True); dest.write_text(json.dumps(res, indent=1))


if __name__ == '__main__':
    argv = sys.argv[1:]
    extra = argv[argv.index('--') + 1:] if '--' in argv else []
    ap = argparse.ArgumentParser()
    ap.add_argument('--config', default='configs/quickstart.yaml')
    ap.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    ap.add_argument('--modes', nargs='+', default=['async', 'sync'])
    ap.add_argument('--name', default='main_job')
    ap.add_argument('--out_root', default='runs/main_job')
    ap.add_argument('--sync_searcher_threads', type=int, default=2, help='torch threads of the searcher in sync mode (it has the machine to itself)')
    main(ap.parse_args(argv[:argv.index('--')] if '--' in argv else argv), extra)
