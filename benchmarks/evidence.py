"""Shared by the comparison benchmarks: read runs (tba_kit's or a peer's, written in tba_kit's run-folder format, or
the compact record `keep_record` makes of one, which is committed beside the results), their held-out accuracy per
problem at every evaluation, intervals over problems and seeds, time to reach an accuracy, the harness checks (the
arms of a comparison see one job and are evaluated on the same problems; a run whose training reward rose while its
held-out accuracy did not is a harness failure), provenance, and an SVG of accuracy against minutes (median over
seeds and the band of their range)."""
import hashlib, json, shlex, shutil, statistics, subprocess, sys, time
from pathlib import Path

import numpy as np

from tba_kit.metrics import bootstrap_ci


ROOT = Path(__file__).resolve().parents[1]


def timed_run(cmd:list, out:Path, resume:bool=False, drop_checkpoints:bool=False) -> float:
    "Run `cmd`, which writes a run into `out`, in its own process; its wall-clock seconds, kept in out/wall_seconds (`resume` reuses a finished run)"
    if resume and (out / 'wall_seconds').exists(): return float((out / 'wall_seconds').read_text())
    if out.exists(): shutil.rmtree(out)
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0: sys.exit(f"{out.name} failed:\n{r.stderr[-3000:]}")
    if drop_checkpoints: drop_weights(out)
    (out / 'wall_seconds').write_text(str(wall := time.perf_counter() - t))
    return wall


def rel(path:Path) -> str:
    "A path as a results file names it: relative to the repository when inside it"
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def is_record(run) -> bool: return Path(run).suffix == '.json'


ROW_KEYS = ('step', 'train/step', 'time/seconds', 'time/train_seconds', 'train/step_seconds', 'train/wait_seconds', 'train/generate_seconds',
            'train/rows', 'train/staleness', 'train/lr', 'train/grad_norm', 'reward/mean', 'search/completions', 'buffer/staleness_mean',
            'sample/recent_slots', 'sample/recent_fallback', 'sample/recent_fraction', 'sample/short_groups', 'offpolicy/log_ratio', 'offpolicy/kl',
            'sync/precision_kl', 'sync/precision_version', 'is/clipped', 'eval/accuracy', 'eval/sampled_accuracy')  # what a record keeps of each metrics row


def rows(run:Path) -> list:
    "A run's metrics rows (a record: the keys in ROW_KEYS)"
    if is_record(run): return json.loads(Path(run).read_text())['rows']
    return [json.loads(l) for l in open(Path(run) / 'metrics.jsonl')]


def problems_key(prompts:list) -> str:
    "A short fingerprint of the held-out problems an evaluation scored, in order"
    return hashlib.sha1('\n'.join(map(str, prompts)).encode()).hexdigest()[:16]


def evaluations(run:Path) -> list:
    "Every evaluation of a run: dicts of step, wall seconds since start, training seconds, accuracy, per-problem correctness, the problems' fingerprint"
    kept = json.loads(Path(run).read_text())['evals'] if is_record(run) else None
    out = []
    for r in rows(run):
        if 'eval/accuracy' not in r: continue
        if kept is not None:
            e = kept[str(r['step'])]
            correct, sampled_each, key = [float(c) for c in e['correct']], e.get('sampled_each', []), e['problems']
        else:
            f = Path(run) / 'evals' / f"step_{r['step']:06d}.jsonl"
            per = [json.loads(l) for l in open(f)] if f.exists() else []
            correct, sampled_each = [p['correct'] for p in per if 'correct' in p], [p['sampled_accuracy'] for p in per if 'sampled_accuracy' in p]
            key = problems_key([p.get('prompt') for p in per]) if per else None
        out.append({'step': r['step'], 'wall': r['time/seconds'], 'train': r.get('time/train_seconds', 0.), 'accuracy': r['eval/accuracy'],
                    'sampled': r.get('eval/sampled_accuracy'), 'correct': correct, 'sampled_each': sampled_each, 'problems': key})
    return out


def drop_weights(run:Path):
    "Delete a run's weights, its checkpoints and TRL's kept policy (0.5-1.5 GB each); its metrics and evals/ stay"
    shutil.rmtree(run / 'checkpoints', ignore_errors=True); (run / 'policy.safetensors').unlink(missing_ok=True)


def final_weights(run:Path, config:str, seed:int, extra:list) -> tuple:
    "A finished run's config and final weights: TRL's policy.safetensors (the job's config with `extra`), or tba_kit's newest checkpoint"
    from tba_kit.checkpoints import find_checkpoint
    from tba_kit.config import Config
    if (run / 'policy.safetensors').exists(): return Config.load(ROOT / config, [f'--seed={seed}', *extra]), run / 'policy.safetensors'
    ck = find_checkpoint(run)
    return Config.from_dict(json.loads((ck / 'config.json').read_text())), ck / 'policy.safetensors'


def keep_record(run:Path, dest:Path, wall:float, **extra) -> Path:
    """A compact record of a finished run folder, small enough to commit beside the results (the folder, checkpoints and
    all, stays out of git): its metrics rows (ROW_KEYS), every evaluation's per-problem correctness and problems'
    fingerprint, its wall-clock seconds, and `extra` (the command, the provenance)"""
    evs = {str(e['step']): {'correct': ''.join('1' if c else '0' for c in e['correct']), 'problems': e['problems']}
           | ({'sampled_each': e['sampled_each']} if e['sampled_each'] else {}) for e in evaluations(run)}
    rec = {'wall_seconds': wall, **extra, 'rows': [{k: r[k] for k in ROW_KEYS if k in r} for r in rows(run)], 'evals': evs}
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(rec, separators=(',', ':')) + '\n')
    return dest


def seeds_interval(acc:np.ndarray) -> dict:
    "Per-problem results [seeds, problems]: the median over seeds of their mean, with a bootstrap interval over seeds and problems"
    lo, hi = bootstrap_ci(acc, stat=np.median)
    return {'median': float(np.median(acc.mean(1))), 'lo': lo, 'hi': hi, 'per_seed': acc.mean(1).tolist()}


def final_with_interval(runs:list, key:str='correct') -> dict:
    "Median over seeds of the final accuracy (greedy: 'correct'; sampled: 'sampled_each'), with a bootstrap interval over seeds and problems"
    return seeds_interval(np.array([evaluations(r)[-1][key] for r in runs], dtype=float))


def gain_with_interval(runs:list, key:str='correct') -> dict:
    "Median over seeds of final minus initial accuracy, with a bootstrap interval over seeds and problems"
    d = np.array([np.array(evaluations(r)[-1][key], float) - np.array(evaluations(r)[0][key], float) for r in runs])
    lo, hi = bootstrap_ci(d, stat=np.median)
    return {'median': float(np.median(d.mean(1))), 'lo': lo, 'hi': hi, 'per_seed': d.mean(1).tolist()}


def time_to(run:Path, acc:float, clock:str='train') -> float|None:
    "Seconds (of training, or 'wall') until the first evaluation at or above `acc`"
    return next((e[clock] for e in evaluations(run) if e['accuracy'] >= acc - 1e-9), None)


def median(xs): return statistics.median(xs) if xs else None


def harness_check(run:Path, rise:float=0.3, window:int=5) -> dict:
    """A run whose training reward rose by `rise` or more while its final held-out accuracy stayed inside the interval of
    its first is a harness failure, not a result: what it learnt, the evaluation never showed it (another prompt format,
    reward or split). Training reward: 'reward/mean' of the trained batches, the mean of the first and last `window`."""
    rs = [r['reward/mean'] for r in rows(run) if 'reward/mean' in r and 'train/step' in r]
    ev = evaluations(run)
    if not rs or len(ev) < 2 or not ev[0]['correct']:
        raise ValueError(f"{run}: no training reward ('reward/mean') or fewer than two evaluations with per-problem results: cannot audit it")
    n = max(1, min(window, len(rs) // 2))
    lo, hi = bootstrap_ci(ev[0]['correct'])
    got = {'reward_start': float(np.mean(rs[:n])), 'reward_end': float(np.mean(rs[-n:])), 'accuracy_start': ev[0]['accuracy'],
           'accuracy_start_interval': [lo, hi], 'accuracy_end': ev[-1]['accuracy']}
    got['failure'] = bool(got['reward_end'] - got['reward_start'] >= rise and lo <= got['accuracy_end'] <= hi)
    return got


# what defines a comparison's job: the model, the prompts and their reward (the task), what a completion may be, and the
# evaluation. Arms of a comparison may differ in their method's settings, never in these.
JOB_FIELDS = ('model', 'task', 'task_args', 'validation', 'max_new_tokens', 'eval', 'eval_limit', 'eval_max_new_tokens', 'eval_samples', 'logprob_temperature', 'time_limit')


def config_of(cmd:list):
    "The Config a benchmark's run trains with, from its command line: `-m tba_kit.cli train CONFIG --key=value ...` or `peer_trl.py --one --config C --seed S ... -- --key=value ...`"
    from tba_kit.config import Config
    cmd = [str(c) for c in cmd]
    if 'tba_kit.cli' in cmd:
        config, over = cmd[cmd.index('train') + 1], cmd[cmd.index('train') + 2:]
    else:
        config, extra = cmd[cmd.index('--config') + 1], cmd[cmd.index('--') + 1:] if '--' in cmd else []
        over = [f"--seed={cmd[cmd.index('--seed') + 1]}", *extra]
    return Config.load(ROOT / config, [o for o in over if o.startswith('--') and '=' in o])


def same_job(arms:dict, vary=()) -> dict:
    """Refuse a comparison whose arms (label -> Config) differ in anything but the fields in `vary` (and seed, out_dir), or
    that lets an arm change what defines the job (JOB_FIELDS: model, prompts, reward, evaluation); the arms' fields that differ"""
    import dataclasses
    if bad := sorted(set(vary) & set(JOB_FIELDS)):
        raise SystemExit(f"harness: an arm may not change {bad}: every arm of a comparison sees the same model, prompts, reward and evaluation")
    ds = {label: dataclasses.asdict(c) for label, c in arms.items()}
    (first, base), *rest = ds.items()
    differ = {}
    for label, d in rest:
        diff = [f for f in base if base[f] != d[f] and f not in ('seed', 'out_dir')]
        if bad := [f for f in diff if f not in vary]:
            raise SystemExit(f"harness: arms {first!r} and {label!r} differ in {bad} ({', '.join(f'{base[f]!r} vs {d[f]!r}' for f in bad)}), "
                             f"which this comparison does not vary ({sorted(vary)})")
        differ[label] = diff
    return differ


def same_evaluation(runs:list) -> int:
    "Refuse runs that were not evaluated on the same held-out problems in the same order (first and last evaluation of each); their number"
    ref = None
    for run in runs:
        ev = evaluations(run)
        for e in (ev[0], ev[-1]):
            if e['problems'] is None: raise SystemExit(f"harness: {run} has no per-problem results for step {e['step']}: cannot check its evaluation")
            if ref is None: ref = (run, e['problems'], len(e['correct']))
            elif e['problems'] != ref[1]: raise SystemExit(f"harness: {run} (step {e['step']}) was evaluated on other problems than {ref[0]}")
    return ref[2] if ref else 0


def provenance(argv:list|None=None) -> dict:
    "What a result needs to be traced: the command, the git commit (and whether the tree had changes), the machine, the versions, the date"
    import datetime, importlib.metadata, os, platform
    git = lambda *a: subprocess.run(['git', *a], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    info = dict(l.split(':', 1) for l in Path('/proc/cpuinfo').read_text().splitlines() if ':' in l) if Path('/proc/cpuinfo').exists() else {}
    info = {k.strip(): v.strip() for k, v in info.items()}  # the last processor's lines: all cores alike here
    flags, cpu = info.get('flags', '').split(), info.get('model name', platform.processor())
    def version(pkg):
        try: return importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError: return None
    try:
        import torch
        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError: gpu = None
    return {'command': shlex.join(['python', *(argv if argv is not None else sys.argv)]), 'commit': git('rev-parse', 'HEAD'),  # the command quoted: it runs again as written
            'dirty': bool(git('status', '--porcelain', '--untracked-files=no')),
            'machine': {'cpu': cpu, 'cores': os.cpu_count(), 'isa': [f for f in ('avx2', 'avx512f', 'avx512_bf16', 'amx_bf16') if f in flags], 'gpu': gpu,
                        'emulated_isa': os.environ.get('ATEN_CPU_CAPABILITY')},  # e.g. 'avx2': torch told to run as on a CPU without native bf16
            'versions': {p: version(p) for p in ('torch', 'transformers', 'trl', 'tba_kit')},
            'date': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}


def interval(r:dict, fmt:str='{:.1%}') -> str:
    "A median with its interval, from {'median', 'lo', 'hi'}"
    return f"{fmt.format(r['median'])} [{fmt.format(r['lo'])}, {fmt.format(r['hi'])}]"


def system_claims(rec:dict, what:str='held-out accuracy') -> list:
    "The ledger's rows for a comparison of systems (peer_trl.py, per_step.py): each system's final accuracy, and its accuracy at steps 10, 20 and 30 where every run reached them"
    res, out = rec['results'], []
    for s, r in res['systems'].items():
        n = len(r['final']['per_seed'])
        out.append({'claim': f"{s}: final {what} ({n} seed{'s' * (n > 1)}, {median(r['steps']):g} steps, from {r['initial']:.1%})",
                    'value': interval(r['final'])})
        if (ratio := r.get('ratio_to_reference_time', r.get('ratio_to_trl_time'))) is not None:  # the older files' name
            out.append({'claim': f"{s}: training time to {res['reference']}'s median final, as a share of {res['reference']}'s",
                        'value': f"{ratio:.2f}x"})
    for step in ('10', '20', '30'):
        for s, r in (res.get('at_steps') or {}).get(step, {}).items():
            n = len(r['per_seed'])
            out.append({'claim': f"{s}: {what} at step {step} ({n} seed{'s' * (n > 1)})", 'value': interval(r)})
    return out


def curve_svg(series:dict, path:Path, clock:str='train', title:str='held-out greedy accuracy'):
    "An SVG: for each system (name -> run folders), the median accuracy over seeds against minutes, and the band of the seeds' range"
    curves = {n: [[(e[clock] / 60, e['accuracy']) for e in evaluations(r)] for r in runs] for n, runs in series.items()}
    lines_svg(curves, path, f'{"training" if clock == "train" else "wall-clock"} minutes', title)


def lines_svg(curves:dict, path:Path, xlabel:str, title:str, ytick:str='{:.0%}', ystep:float=0.1):
    "An SVG of curves: for each system (name -> one list of (x, y) per seed), the median over seeds and the band of their range"
    colors, W, H, pad = ['#4c78a8', '#f58518', '#54a24b', '#e45756', '#72b7b2'], 640, 320, 50
    tmax = max(t for cs in curves.values() for c in cs for t, _ in c) or 1
    amin = min(a for cs in curves.values() for c in cs for _, a in c)
    amax = max(a for cs in curves.values() for c in cs for _, a in c)
    lo_y, hi_y = max(0, np.floor(amin / ystep) * ystep), np.ceil(amax / ystep) * ystep + 1e-9
    X = lambda t: pad + (W - pad - 20) * t / tmax
    Y = lambda a: 20 + (H - pad - 20) * (1 - (a - lo_y) / max(hi_y - lo_y, 1e-9))
    grid = np.linspace(0, tmax, 60)
    at = lambda c, t: next((a for s, a in reversed(c) if s <= t + 1e-9), None)  # the latest point by x = t
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H + 30}" font-family="sans-serif" font-size="11">',
           f'<text x="{pad}" y="12">{title} (median over seeds; band: their range)</text>',
           f'<line x1="{pad}" x2="{W - 20}" y1="{Y(lo_y)}" y2="{Y(lo_y)}" stroke="black"/>',
           f'<line x1="{pad}" x2="{pad}" y1="20" y2="{Y(lo_y)}" stroke="black"/>']
    for v in np.arange(lo_y, hi_y + 1e-9, ystep):
        out.append(f'<text x="{pad - 34}" y="{Y(v) + 4}">{ytick.format(v)}</text><line x1="{pad}" x2="{W - 20}" y1="{Y(v)}" y2="{Y(v)}" stroke="#ddd"/>')
    tick = min(b * 10 ** e for e in range(-3, 7) for b in (1, 2, 5) if b * 10 ** e >= tmax / 8)  # a round step, at most 8 ticks
    for m in np.arange(0, tmax + 1e-9, tick):
        out.append(f'<text x="{X(m) - 4}" y="{Y(lo_y) + 14}">{m:.4g}</text>')
    out.append(f'<text x="{W / 2 - 60}" y="{H + 6}">{xlabel}</text>')
    for j, (name, cs) in enumerate(curves.items()):
        pts = [(t, [v for c in cs if (v := at(c, t)) is not None]) for t in grid]
        pts = [(t, vs) for t, vs in pts if len(vs) == len(cs)]
        if not pts: continue
        band = [(X(t), Y(max(vs))) for t, vs in pts] + [(X(t), Y(min(vs))) for t, vs in reversed(pts)]
        out.append(f'<polygon points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in band)}" fill="{colors[j % 5]}" opacity="0.15"/>')
        line = " ".join(f"{X(t):.1f},{Y(statistics.median(vs)):.1f}" for t, vs in pts)
        out.append(f'<polyline points="{line}" fill="none" stroke="{colors[j % 5]}" stroke-width="2"/>')
        out.append(f'<rect x="{pad + j * 130}" y="{H + 14}" width="10" height="10" fill="{colors[j % 5]}"/><text x="{pad + j * 130 + 14}" y="{H + 23}">{name}</text>')
    Path(path).write_text('\n'.join(out + ['</svg>']) + '\n')


def points_svg(series:dict, path:Path, xlabel:str, ylabel:str, log_x:bool=False):
    "An SVG of points with error bars: for each series (name -> list of (x, y, x_lo, x_hi, y_lo, y_hi)), its points joined in order, a zero line"
    colors, W, H, pad = ['#4c78a8', '#f58518', '#54a24b', '#e45756', '#72b7b2'], 640, 320, 50
    pts = [p for ps in series.values() for p in ps]
    if not pts: raise ValueError("points_svg: no points to draw")
    fx = (lambda v: np.log10(v)) if log_x else (lambda v: v)
    xs, ys = [fx(v) for p in pts for v in (p[0], p[2], p[3])], [v for p in pts for v in (p[1], p[4], p[5], 0.)]
    (x0, x1), (y0, y1) = (min(xs), max(xs)), (min(ys), max(ys))
    x0, x1, y0, y1 = x0 - 0.05 * (x1 - x0 or 1), x1 + 0.05 * (x1 - x0 or 1), y0 - 0.05 * (y1 - y0 or 1), y1 + 0.05 * (y1 - y0 or 1)
    X = lambda v: pad + (W - pad - 20) * (fx(v) - x0) / (x1 - x0)
    Y = lambda v: 20 + (H - pad - 20) * (1 - (v - y0) / (y1 - y0))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H + 30}" font-family="sans-serif" font-size="11">',
           f'<text x="{pad}" y="12">{ylabel} (median over seeds; bars: the seeds\' range of x, the interval of y)</text>',
           f'<line x1="{pad}" x2="{W - 20}" y1="{H - pad + 20}" y2="{H - pad + 20}" stroke="black"/><line x1="{pad}" x2="{pad}" y1="20" y2="{H - pad + 20}" stroke="black"/>',
           f'<line x1="{pad}" x2="{W - 20}" y1="{Y(0):.1f}" y2="{Y(0):.1f}" stroke="#999" stroke-dasharray="4"/>',
           f'<text x="{W / 2 - 150}" y="{H + 6}">{xlabel}</text>']
    for v in np.linspace(y0, y1, 6): out.append(f'<text x="{pad - 40}" y="{Y(v) + 4:.1f}">{v:.3g}</text>')
    ticks = [10.0 ** e for e in range(int(np.floor(x0)), int(np.ceil(x1)) + 1) if x0 <= e <= x1] if log_x else list(np.linspace(x0, x1, 6))
    for t in ticks: out.append(f'<text x="{X(t) - 12:.1f}" y="{H - pad + 34}">{t:.3g}</text>')
    for j, (name, ps) in enumerate(series.items()):
        c = colors[j % 5]
        if len(ps) > 1: out.append(f'<polyline points="{" ".join(f"{X(p[0]):.1f},{Y(p[1]):.1f}" for p in ps)}" fill="none" stroke="{c}" stroke-width="1.5"/>')
        for x, y, xl, xh, yl, yh in ps:
            out.append(f'<line x1="{X(xl):.1f}" x2="{X(xh):.1f}" y1="{Y(y):.1f}" y2="{Y(y):.1f}" stroke="{c}"/><line x1="{X(x):.1f}" x2="{X(x):.1f}" y1="{Y(yl):.1f}" y2="{Y(yh):.1f}" stroke="{c}"/>'
                       f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="3.5" fill="{c}"/>')
        out.append(f'<rect x="{pad + j * 130}" y="{H + 14}" width="10" height="10" fill="{c}"/><text x="{pad + j * 130 + 14}" y="{H + 23}">{name}</text>')
    Path(path).write_text('\n'.join(out + ['</svg>']) + '\n')
