"""Replay-buffer benchmark: insert throughput and sample latency with 1M stored trajectories.

Usage: python benchmarks/buffer.py [--prompts 10000] [--per-prompt 100] [--tokens 32] [--out benchmarks/results/buffer.json]
Targets (issue 2): insert >= 200k trajectories/s; sampling 64 prompts x 20 completions <= 5 ms.
"""
import argparse, json, platform, statistics, sys, time
from pathlib import Path

import torch

from tba_kit.core import Trajectory
from tba_kit.buffer import ReplayBuffer
from tba_kit.samplers import MixedSampler, RecencySampler, RewardSampler, StalenessCap, UniformSampler

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import provenance  # noqa: E402


def make_trajectories(n_prompts, per_prompt, tokens, version, seed):
    "per_prompt distinct completions for each prompt, prompt tensors shared within a prompt"
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 50_000, (n_prompts * per_prompt, tokens), generator=g)
    lps = -torch.rand(n_prompts * per_prompt, tokens, generator=g)
    rewards = (torch.rand(n_prompts * per_prompt, generator=g) < 0.3).float().tolist()
    out, row = [], 0
    for p in range(n_prompts):
        prompt = torch.randint(0, 50_000, (64,), generator=g)
        for _ in range(per_prompt):
            out.append(Trajectory(p, prompt, ids[row], lps[row], reward=rewards[row], version=version, ref_logprob=-10.))
            row += 1
    return out


def timed_insert(buf, trajs, chunk=1024):
    t0 = time.perf_counter()
    for i in range(0, len(trajs), chunk): buf.add(trajs[i:i + chunk])
    return len(trajs) / (time.perf_counter() - t0)


def sample_latency_ms(sampler, buf, n_prompts, k, version, reps):
    sampler.sample(buf, n_prompts, k, version=version)  # warm caches
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        sampler.sample(buf, n_prompts, k, version=version)
        ts.append((time.perf_counter() - t0) * 1e3)
    return {'median_ms': statistics.median(ts), 'p90_ms': sorted(ts)[int(0.9 * len(ts))]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--prompts', type=int, default=10_000)
    ap.add_argument('--per-prompt', type=int, default=100)
    ap.add_argument('--tokens', type=int, default=32)
    ap.add_argument('--reps', type=int, default=200)
    ap.add_argument('--out', default=str(Path(__file__).parent / 'results' / 'buffer.json'))
    a = ap.parse_args()
    n = a.prompts * a.per_prompt
    print(f"building {n:,} trajectories ({a.prompts:,} prompts x {a.per_prompt}, {a.tokens} tokens each) ...", flush=True)
    first = make_trajectories(a.prompts, a.per_prompt, a.tokens, version=0, seed=0)
    later = make_trajectories(a.prompts // 10, a.per_prompt, a.tokens, version=5, seed=1)  # new completions of 10% of prompts

    buf = ReplayBuffer(capacity_per_prompt=a.per_prompt)
    fill = timed_insert(buf, first)
    print(f"insert into an empty buffer up to {len(buf):,}: {fill:,.0f} trajectories/s", flush=True)
    # steady state: the buffer is full, every insert evicts the prompt's oldest completion
    steady = timed_insert(buf, later)
    print(f"insert at {len(buf):,} stored (each insert evicts one): {steady:,.0f} trajectories/s", flush=True)
    dups = timed_insert(buf, later[: len(later) // 2])
    print(f"insert of exact duplicates at {len(buf):,} stored: {dups:,.0f} trajectories/s", flush=True)
    bounded = ReplayBuffer(capacity_per_prompt=a.per_prompt, max_size=n // 2)
    glob = timed_insert(bounded, first)
    print(f"insert with a global bound of {n // 2:,} (evicting globally oldest): {glob:,.0f} trajectories/s", flush=True)
    buf.mark_sync()
    buf.add(make_trajectories(64, 20, a.tokens, version=6, seed=2))  # a fresh sync period with 64 prompts

    samplers = {'uniform': UniformSampler(seed=0), 'reward(inv_temp=1)': RewardSampler(1.0, seed=0),
                'recency': RecencySampler(seed=0), 'mixed(m=0.95)': MixedSampler(0.95, 1.0, seed=0),
                'mixed(m=0.5)': MixedSampler(0.5, 1.0, seed=0),
                'staleness_cap(mixed(m=0.5), 2)': StalenessCap(MixedSampler(0.5, 1.0, seed=0), 2)}
    latency = {}
    for name, s in samplers.items():
        latency[name] = sample_latency_ms(s, buf, 64, 20, version=6, reps=a.reps if 'cap' not in name else max(a.reps // 10, 5))
        print(f"sample 64 prompts x 20 with {name}: median {latency[name]['median_ms']:.2f} ms, p90 {latency[name]['p90_ms']:.2f} ms", flush=True)

    res = {'stored': len(buf), 'prompts': a.prompts, 'per_prompt': a.per_prompt, 'tokens': a.tokens,
           'insert_per_s': {'fill': fill, 'steady_evicting': steady, 'duplicates': dups, 'global_bound': glob},
           'sample_64x20': latency,
           'targets': {'insert_per_s': 200_000, 'sample_ms': 5.0}, 'python': platform.python_version()}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({**provenance(), **res}, indent=2))  # provenance's machine, versions and date
    print(f"wrote {a.out}")


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): insert throughput and sample latency against the targets of issue 2"
    ins, lat, tg = rec['insert_per_s'], rec['sample_64x20'], rec['targets']
    out = [{'claim': f"replay buffer: insert into an empty buffer up to {rec['stored']:,} trajectories (target {tg['insert_per_s']:,}/s)", 'value': f"{ins['fill']:,.0f}/s"},
           {'claim': f"replay buffer: insert at {rec['stored']:,} stored, each insert evicting one", 'value': f"{ins['steady_evicting']:,.0f}/s"},
           {'claim': f"replay buffer: insert with a global bound of {rec['prompts'] * rec['per_prompt'] // 2:,}", 'value': f"{ins['global_bound']:,.0f}/s"}]
    out += [{'claim': f"sample 64 prompts x 20 completions from {rec['stored']:,} stored with {name} (target {tg['sample_ms']:g} ms; median, p90)",
             'value': f"{r['median_ms']:.2f} ms, p90 {r['p90_ms']:.2f} ms"} for name, r in lat.items() if name in ('uniform', 'reward(inv_temp=1)', 'mixed(m=0.5)', 'staleness_cap(mixed(m=0.5), 2)')]
    return out


if __name__ == '__main__':
    main()
