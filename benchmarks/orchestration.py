"""The orchestration bound: how close the loop comes to the throughput its simulated costs allow.

Searchers are simulated engines that sleep S seconds per batch of `prompts_per_step` prompts (S * n / prompts_per_step
for a call with n prompts) and return fake completions; the trainer's step is padded to T seconds (the tiny model's real
step, then a sleep). Everything else is real: the loop, the replay buffer, the sampler, reward scoring, the weight
channel (every step publishes the tiny model through shared memory). For N searchers:

- async: trainer steps per second over the ideal min(1/T, N/S) (each batch fresh; replay lets the trainer go faster
  when N/S < 1/T, so the ratio may then exceed 1), and the trainer's idle share (time waiting for data);
- sync: steps per second over the ideal 1 / (G + T), where G = S * ceil(P/N) / P is the time of the largest shard when a
  batch of P prompts is split over N searchers (S/N when N divides P);
- the async / sync speed-up over its ideal (G + T) / max(T, S/N).

`--placement` says where the simulated searchers run: `inline` (in the driver's event loop: the orchestration alone),
`process` (each a searcher process: real pipes, compact records, weights through shared memory), `ray` (each a Ray
actor on a cluster of `--nodes` nodes started on this machine: real actor calls, weights through the object store).
In processes and actors the simulated engine (`benchmarks/sim_engine.py`) installs every published snapshot for real.
Prints a table and writes benchmarks/results/orchestration.json (one entry per placement).

    PYTHONPATH=. python benchmarks/orchestration.py [--placement inline process ray] [--searchers 1 3 7 15] [--S 0.1] [--T 0.1] [--steps 60] [--prompts_per_step 16] [--nodes 4]
    PYTHONPATH=. python benchmarks/orchestration.py --breakdown   # where the driver's time goes (orchestration_breakdown.json)
    PYTHONPATH=. python benchmarks/orchestration.py --placement process --searchers 1 2 4 --S 0.27 --T 1 --prompts_per_step 4 --name reasoning_fleet --note '...'  # a job's measured costs, scaled
"""
import argparse, asyncio, gc, json, math, os, statistics, sys, tempfile, time
from pathlib import Path

import torch

import tba_kit.loop as L
from tba_kit.build import WeightSync
from tba_kit.loop import run
from tba_kit.tasks import PromptTask
from tba_kit.trainer import Trainer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import provenance  # noqa: E402

COST = {}  # 'S', 'T', 'ppstep': the simulated costs of this measurement


def breakdown(ms:dict):
    "Time the driver's per-step work (wraps library methods; for this measurement only) and the garbage collector's pauses"
    from tba_kit.samplers import MixedSampler, Sample
    def wrap(cls, name):
        f = getattr(cls, name)
        def add(t):
            ms.setdefault(name, []).append(1e3 * (time.perf_counter() - t))
        async def timed_async(*a, **k):
            t = time.perf_counter()
            try: return await f(*a, **k)
            finally: add(t)
        def timed(*a, **k):
            t = time.perf_counter()
            try: return f(*a, **k)
            finally: add(t)
        setattr(cls, name, timed_async if asyncio.iscoroutinefunction(f) else timed)
    for cls, name in ((Trainer, 'step'), (L.Run, 'train_step'), (WeightSync, 'snapshot'), (WeightSync, 'hand_out'), (L.Run, 'record'),
                      (MixedSampler, 'sample'), (Sample, 'collate')):
        wrap(cls, name)
    def pause(phase, info, t=[0.]):  # a collection holds the interpreter: every thread waits
        if phase == 'start': t[0] = time.perf_counter()
        else: ms.setdefault(f"gc{info['generation']}", []).append(1e3 * (time.perf_counter() - t[0]))
    gc.callbacks.append(pause)

def padded_step(step):
    def timed(self, batch, *args):
        t = time.perf_counter()
        m = step(self, batch, *args)
        time.sleep(max(0., COST['T'] - (time.perf_counter() - t)))
        return m
    return timed


def ray_cluster(nodes:int, slots:int):
    "`nodes` nodes with `slots` CPUs each (a searcher takes one) and a head without CPUs for the driver"
    import ray
    from ray.cluster_utils import Cluster
    c = Cluster(initialize_head=True, head_node_args=dict(num_cpus=0, object_store_memory=200 * 2**20))
    for _ in range(nodes): c.add_node(num_cpus=slots, object_store_memory=100 * 2**20)
    c.wait_for_nodes(); ray.init(address=c.address)
    return c


async def measure(mode:str, n:int, steps:int, out:Path, placement:str) -> dict:
    task = PromptTask([f'Say word {i}' for i in range(64)], lambda prompts, completions, **kw: [0.5] * len(completions), name='sim')
    pp = COST['ppstep']
    await run(model='tiny', task=task, engine='benchmarks.sim_engine:SimEngine', placement=placement, searchers=n, mode=mode, steps=steps, k=4,
              prompts_per_step=pp, search_prompts=pp, prefill=4 * pp, precision='fp32', searcher_dtype='float32', eval=False,
              out_dir=str(out), progress=False)
    rows = [json.loads(l) for l in open(out / 'metrics.jsonl') if 'train/step' in l]
    w = rows[len(rows) // 5:]  # after the start-up
    secs = w[-1]['time/seconds'] - w[0]['time/seconds']
    return {'steps_per_s': (len(w) - 1) / secs, 'idle': sum(r['train/wait_seconds'] for r in w[1:]) / secs,
            'step_seconds_median': statistics.median(r['train/step_seconds'] for r in w)}


async def main(placements:list, ns:list, S:float, T:float, steps:int, ppstep:int, split:bool, nodes:int, name:str|None=None, note:str=''):
    COST.update(S=S, T=T, ppstep=ppstep)
    os.environ.update(TBA_SIM_S=str(S), TBA_SIM_P=str(ppstep))  # for the simulated engines in workers
    os.environ['PYTHONPATH'] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get('PYTHONPATH', '')])
    Trainer.step = padded_step(Trainer.step)
    ms = {}
    if split: breakdown(ms)
    torch.set_num_threads(1)
    out = Path(__file__).parent / 'results' / f"{name or ('orchestration_breakdown' if split else 'orchestration')}.json"
    res, made = {'S': S, 'T': T, 'steps': steps, 'prompts_per_step': ppstep, 'placements': {}} | ({'note': note} if note else {}), provenance()
    for placement in placements:
        cluster = ray_cluster(nodes, math.ceil(max(ns) / nodes)) if placement == 'ray' else None
        print(f"placement {placement}" + (f" ({nodes} Ray nodes)" if cluster else ''), flush=True)
        res['placements'][placement] = await measure_all(placement, ns, S, T, steps, ppstep, split, ms)
        if cluster is not None:
            import ray; ray.shutdown(); cluster.shutdown()
            res['nodes'] = nodes
        out.write_text(json.dumps({**made, **res}, indent=1))
    if not split: figure(res, out.with_suffix('.svg'))
    print(f"wrote {out}")


async def measure_all(placement, ns, S, T, steps, ppstep, split, ms) -> list:
    rows, tmp = [], Path(tempfile.mkdtemp())
    for n in ns:
        ms.clear()
        a = await measure('async', n, steps, tmp / f'a{n}', placement)
        if split:
            a['ms_per_call'] = {k: {'median': statistics.median(v), 'max': max(v), 'calls': len(v), 'total': sum(v)} for k, v in ms.items()}
            print(f"N={n:2d}  async, ms per call (median / max): " + ', '.join(f"{k} {v['median']:.2f} / {v['max']:.1f}" for k, v in a['ms_per_call'].items()), flush=True)
        s = await measure('sync', n, steps, tmp / f's{n}', placement)
        gen = S * math.ceil(ppstep / n) / ppstep  # sync: the largest shard of a batch split over n searchers (S/n when it divides)
        ideal_async, ideal_sync = min(1 / T, n / S), 1 / (gen + T)
        speedup, ideal_speedup = a['steps_per_s'] / s['steps_per_s'], (gen + T) / max(T, S / n)
        rows.append({'searchers': n, 'async_steps_per_s': a['steps_per_s'], 'async_ratio': a['steps_per_s'] / ideal_async,
                     'async_idle': a['idle'], 'sync_steps_per_s': s['steps_per_s'], 'sync_ratio': s['steps_per_s'] / ideal_sync,
                     'speedup': speedup, 'speedup_ratio': speedup / ideal_speedup, 'ideal_speedup': ideal_speedup,
                     **({'async_ms_per_call': a['ms_per_call']} if split else {})})
        r = rows[-1]
        print(f"N={n:2d}  async {r['async_steps_per_s']:.2f}/s ({r['async_ratio']:.3f} of ideal, idle {r['async_idle']:.1%})  "
              f"sync {r['sync_steps_per_s']:.2f}/s ({r['sync_ratio']:.3f})  speed-up {speedup:.3f} of {ideal_speedup:.3f} "
              f"({r['speedup_ratio']:.3f})", flush=True)
    return rows


def figure(res:dict, path:Path):
    "An SVG of the two ratios per placement and N, with the 0.97 goal (for the README)"
    colors, W, H, pad = {'inline': '#4c78a8', 'process': '#f58518', 'ray': '#54a24b'}, 360, 220, 40
    panels = [('async_ratio', 'async steps/s over ideal'), ('speedup_ratio', 'async/sync speed-up over ideal')]
    top = max(1.3, max(r[k] for rows in res['placements'].values() for r in rows for k, _ in panels))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * W}" height="{H + 30}" font-family="sans-serif" font-size="11">']
    for p, (key, title) in enumerate(panels):
        x0, ns = p * W + pad, [r['searchers'] for r in next(iter(res['placements'].values()))]
        y = lambda v: 20 + (H - pad) * (1 - v / top)
        out += [f'<text x="{x0}" y="12">{title}</text>', f'<line x1="{x0}" x2="{x0 + W - pad - 10}" y1="{y(0)}" y2="{y(0)}" stroke="black"/>',
                f'<line x1="{x0}" x2="{x0 + W - pad - 10}" y1="{y(.97)}" y2="{y(.97)}" stroke="red" stroke-dasharray="4 3"/>',
                f'<text x="{x0 - 30}" y="{y(.97) + 4}" fill="red">0.97</text>', f'<text x="{x0 - 30}" y="{y(0) + 4}">0</text>']
        gw = (W - pad - 10) / len(ns)
        bw = gw * 0.8 / len(res['placements'])
        for i, n in enumerate(ns):
            out.append(f'<text x="{x0 + i * gw + gw / 2 - 12}" y="{y(0) + 14}">N={n}</text>')
            for j, (pl, rows) in enumerate(res['placements'].items()):
                v, bx = rows[i][key], x0 + i * gw + gw * 0.1 + j * bw
                out.append(f'<rect x="{bx:.1f}" y="{y(v):.1f}" width="{bw - 1:.1f}" height="{y(0) - y(v):.1f}" fill="{colors[pl]}"><title>{pl} N={n}: {v:.3f}</title></rect>')
    for j, pl in enumerate(res['placements']):
        out.append(f'<rect x="{pad + j * 90}" y="{H + 14}" width="10" height="10" fill="{colors[pl]}"/><text x="{pad + j * 90 + 14}" y="{H + 23}">{pl}</text>')
    path.write_text('\n'.join(out + ['</svg>']) + '\n')


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): per placement, async steps/s and the async/sync speed-up over their ideals, at each number of searchers"
    out, cost = [], f"S = {rec['S']:g} s a batch, T = {rec['T']:g} s a step" + (f": {rec['note']}" if rec.get('note') else '')
    for pl, rows in rec['placements'].items():
        ns, pl = ', '.join(str(r['searchers']) for r in rows), f"{pl} ({rec['nodes']} Ray nodes)" if pl == 'ray' and 'nodes' in rec else pl
        out += [{'claim': f"{pl} searchers: async trainer steps/s over the ideal min(1/T, N/S), N = {ns} ({cost}; goal 0.97)", 'value': ', '.join(f"{r['async_ratio']:.3f}" for r in rows)},
                {'claim': f"{pl} searchers: async/sync speed-up over its ideal, N = {ns}", 'value': ', '.join(f"{r['speedup']:.2f}x of {r['ideal_speedup']:.2f}x ({r['speedup_ratio']:.3f})" for r in rows)}]
    return out


if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('--placement', nargs='+', default=['inline', 'process', 'ray'], choices=['inline', 'process', 'ray'])
    ap.add_argument('--nodes', type=int, default=4, help='Ray nodes (placement ray)')
    ap.add_argument('--searchers', type=int, nargs='+', default=[1, 3, 7, 15])
    ap.add_argument('--S', type=float, default=0.1, help='seconds a searcher takes for a batch of prompts_per_step prompts')
    ap.add_argument('--T', type=float, default=0.1, help='seconds of a trainer step')
    ap.add_argument('--steps', type=int, default=60)
    ap.add_argument('--prompts_per_step', type=int, default=16)
    ap.add_argument('--breakdown', action='store_true', help="also time the driver's work per step (adds a little overhead)")
    ap.add_argument('--figure', action='store_true', help='only redraw orchestration.svg from orchestration.json')
    ap.add_argument('--name', default=None, help='results/<name>.json and .svg (default: orchestration, or orchestration_breakdown)')
    ap.add_argument('--note', default='', help='what the simulated costs stand for (kept in the record and its ledger rows)')
    a = ap.parse_args()
    if a.figure:
        res = Path(__file__).parent / 'results' / 'orchestration.json'
        figure(json.loads(res.read_text()), res.with_suffix('.svg')); raise SystemExit
    asyncio.run(main(a.placement, a.searchers, a.S, a.T, a.steps, a.prompts_per_step, a.breakdown, a.nodes, a.name, a.note))
