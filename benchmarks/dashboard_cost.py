"""Cost of one dashboard redraw: each figure the dashboard draws, from synthetic rows shaped like the loop's (a 200-step
run, 11.5 s per step as in the quickstart, three spans per step on the timeline) and a replay buffer of 50,000
completions (2,500 prompts x 20). Median of 5 after a first, cold draw (plotly loading); also the size of each figure's
JSON, what the dashboard sends to the browser. Writes benchmarks/results/dashboard_cost.json.

    python benchmarks/dashboard_cost.py
"""
import json, random, statistics, sys, time
from pathlib import Path

import torch

from tba_kit.buffer import ReplayBuffer
from tba_kit.core import Trajectory
from tba_kit.viz import buffer_histograms, curves, diversity, health, timeline

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import provenance  # noqa: E402


def main():
    torch.set_num_threads(2); random.seed(0)
    steps, step_s = 200, 11.5
    rows = [{'step': i, 'time/seconds': step_s * i, 'time/train_seconds': step_s * i, 'reward/mean': random.random(),
             'loss/tb': 1., 'tb/logZ': .1, 'ref/log_ratio': .01, 'eval/kl': .02, 'buffer/size': 100 + i, 'buffer/staleness_mean': .5,
             'search/tokens_per_s': 50., 'train/step': i, 'train/step_seconds': 11., 'train/wait_seconds': .01,
             'diversity/of_step': i, 'diversity/distinct_2': .5, 'diversity/self_bleu': .3, 'diversity/distinct_correct': 1.,
             'diversity/embedding': .4} for i in range(1, steps + 1)]
    rows += [{'step': i, 'eval/accuracy': .1} for i in range(0, steps + 1, 10)]
    spans = [{'who': w, 'kind': k, 'start': i * step_s + o, 'end': i * step_s + o + d} for i in range(steps)
             for w, k, o, d in (('trainer', 'train', 0, 11), ('trainer', 'sync', 11, .3), ('proc0', 'search', 0, 11.4))]
    buf = ReplayBuffer(capacity_per_prompt=20)
    buf.add([Trajectory(p, torch.tensor([1, 2, 3]), torch.tensor([c, p]), torch.zeros(2), reward=random.random(),
                        version=random.randint(0, 30)) for p in range(2500) for c in range(20)])
    draws = {'curves': lambda: curves(rows, window=5), 'health': lambda: health(rows), 'timeline': lambda: timeline(spans, last=300),
             'diversity': lambda: diversity(rows), 'buffer_histograms': lambda: buffer_histograms(buf, version=30)}
    res = {'steps': steps, 'buffer_completions': len(buf)}
    first = time.perf_counter()
    for draw in draws.values(): draw()
    res['cold_redraw_seconds'] = time.perf_counter() - first
    for name, draw in draws.items():
        times = []
        for _ in range(5):
            t = time.perf_counter(); fig = draw(); times.append(time.perf_counter() - t)
        res[f"{name}_seconds_median"], res[f"{name}_json_bytes"] = statistics.median(times), len(fig.to_json())
    res['redraw_seconds'] = sum(res[f"{n}_seconds_median"] for n in draws)
    res['redraw_share_of_step_every_5_steps'] = res['redraw_seconds'] / (5 * step_s)
    for k, v in res.items(): print(f"{k}: {v:.4f}" if isinstance(v, float) else f"{k}: {v}")
    out = Path(__file__).parent / 'results' / 'dashboard_cost.json'
    out.parent.mkdir(exist_ok=True); out.write_text(json.dumps({**provenance(), **res}, indent=1))


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): the seconds of one dashboard redraw, and its share of the trainer's time"
    figs = [k.removesuffix('_seconds_median') for k in rec if k.endswith('_seconds_median')]
    return [{'claim': f"dashboard redraw, every figure ({rec['steps']}-step run, {rec['buffer_completions']:,} completions in the buffer; median of 5, warm)",
             'value': f"{rec['redraw_seconds']:.3f} s"},
            {'claim': 'dashboard: first, cold redraw (plotly loading)', 'value': f"{rec['cold_redraw_seconds']:.3f} s"},
            {'claim': "dashboard redraw every 5 steps, as a share of the quickstart's training time (11.5 s per step)", 'value': f"{rec['redraw_share_of_step_every_5_steps']:.2%}"},
            {'claim': 'dashboard: JSON sent to the browser per redraw, all figures', 'value': f"{sum(rec[f'{f}_json_bytes'] for f in figs) / 1e3:.0f} kB"}]


if __name__ == '__main__':
    main()
