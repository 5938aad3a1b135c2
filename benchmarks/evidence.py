"""Shared by the comparison benchmarks: read runs (tba_kit's or a peer's, written in tba_kit's run-folder format),
their held-out accuracy per problem at every evaluation, intervals over problems and seeds, time to reach an accuracy,
and an SVG of accuracy against minutes (median over seeds and the band of their range)."""
import json, shutil, statistics, subprocess, sys, time
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
    if drop_checkpoints: shutil.rmtree(out / 'checkpoints', ignore_errors=True)  # 1.5 GB each; metrics and evals/ stay
    (out / 'wall_seconds').write_text(str(wall := time.perf_counter() - t))
    return wall


def rows(run:Path) -> list:
    return [json.loads(l) for l in open(Path(run) / 'metrics.jsonl')]


def evaluations(run:Path) -> list:
    "Every evaluation of a run: dicts of step, wall seconds since start, training seconds, accuracy, and per-problem correctness"
    out = []
    for r in rows(run):
        if 'eval/accuracy' not in r: continue
        f = Path(run) / 'evals' / f"step_{r['step']:06d}.jsonl"
        per = [json.loads(l) for l in open(f)] if f.exists() else []
        out.append({'step': r['step'], 'wall': r['time/seconds'], 'train': r.get('time/train_seconds', 0.), 'accuracy': r['eval/accuracy'],
                    'sampled': r.get('eval/sampled_accuracy'), 'correct': [p['correct'] for p in per if 'correct' in p],
                    'sampled_each': [p['sampled_accuracy'] for p in per if 'sampled_accuracy' in p]})
    return out


def final_with_interval(runs:list, key:str='correct') -> dict:
    "Median over seeds of the final accuracy (greedy: 'correct'; sampled: 'sampled_each'), with a bootstrap interval over seeds and problems"
    finals = np.array([evaluations(r)[-1][key] for r in runs], dtype=float)  # [seeds, problems]
    lo, hi = bootstrap_ci(finals, stat=np.median)
    return {'median': float(np.median(finals.mean(1))), 'lo': lo, 'hi': hi, 'per_seed': finals.mean(1).tolist()}


def gain_with_interval(runs:list, key:str='correct') -> dict:
    "Median over seeds of final minus initial accuracy, with a bootstrap interval over seeds and problems"
    d = np.array([np.array(evaluations(r)[-1][key], float) - np.array(evaluations(r)[0][key], float) for r in runs])
    lo, hi = bootstrap_ci(d, stat=np.median)
    return {'median': float(np.median(d.mean(1))), 'lo': lo, 'hi': hi, 'per_seed': d.mean(1).tolist()}


def time_to(run:Path, acc:float, clock:str='train') -> float|None:
    "Seconds (of training, or 'wall') until the first evaluation at or above `acc`"
    return next((e[clock] for e in evaluations(run) if e['accuracy'] >= acc - 1e-9), None)


def median(xs): return statistics.median(xs) if xs else None


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
