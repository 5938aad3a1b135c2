"""How often a training batch repeats a prompt or a whole group: tba_kit's samplers against the paper's get_batch
(written here from its description: prompts without replacement from pools refilled when empty, a random K of a
recency prompt's new completions), on a simulated buffer fed as the main job feeds it.

Usage: python benchmarks/sampler_fidelity.py [--samplers PATH] [--out benchmarks/results/sampler_fidelity.json]
`--samplers` loads the sampler classes from another copy of `tba_kit/samplers.py` (e.g. an older commit's, via
`git show REV:tba_kit/samplers.py > /tmp/old.py`), to measure before and after with the same buffer stream.
"""
import argparse, importlib.util, json, sys
from pathlib import Path

import numpy as np

from tba_kit.buffer import ReplayBuffer
from tba_kit.core import Trajectory

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import provenance  # noqa: E402


def load_samplers(path):
    if path is None: return importlib.import_module('tba_kit.samplers')
    spec = importlib.util.spec_from_file_location('tba_kit._bench_samplers', path, submodule_search_locations=None)
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = 'tba_kit'
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


class PaperBatch:
    "The paper's get_batch: per slot recency w.p. m from the sync's pool, else any prompt; both pools drawn without replacement"
    def __init__(self, m, seed): self.m, self.rng, self.online, self.offline, self.key = m, np.random.default_rng(seed), [], [], None
    def _from(self, pool, refill):
        if not pool: pool.extend(refill)
        return pool.pop(self.rng.integers(len(pool)))
    def sample(self, buf, n, k, version=None):
        if buf.recent_key() != self.key: self.online, self.key = [], buf.recent_key()
        groups, served = [], 0
        for _ in range(n):
            if self.rng.random() < self.m and buf.recent_prompts():
                served += 1
                p = self._from(self.online, buf.recent_prompts())
                new = buf.recent_group(p)
                groups.append([new[i] for i in self.rng.choice(len(new), k, replace=len(new) < k)])
            else:
                p = self._from(self.offline, buf.prompts())
                g = buf.group(p)
                groups.append([g[i] for i in self.rng.choice(len(g), k, replace=len(g) < k)])
        return type('S', (), {'groups': groups, 'stats': {'sample/recent_fraction': served / n}})()


def repeats(groups):
    prompts, sets = [g[0].prompt_id for g in groups], [tuple(sorted(map(id, g))) for g in groups]
    return len(prompts) > len(set(prompts)), len(sets) > len(set(sets))


def recency_share(stats:dict, slots:int) -> float:
    "The share of a batch's slots that took recent data (a sampler from before `sample/recent_fraction`: its recency draws less its fallbacks)"
    if 'sample/recent_fraction' in stats: return stats['sample/recent_fraction']
    return (stats.get('sample/recent_slots', 0) - stats.get('sample/recent_fallback', 0)) / slots


def simulate(sampler, n_prompts, refreshed, slots, k, steps=2000, seed=0):
    "Searches refresh `refreshed` prompts (k completions each; a list: one of its values at random each sync) per sync, then one batch of `slots` x k; shares of batches with a repeat, recency slots per batch"
    rng, buf, order, pos = np.random.default_rng(seed), ReplayBuffer(), [], 0
    rep_prompt = rep_group = 0
    shares = []
    for step in range(steps):
        n_new = refreshed if isinstance(refreshed, int) else max(refreshed) if step == 0 else refreshed[rng.integers(len(refreshed))]  # a list: the first sync always brings data
        for _ in range(n_new):
            if pos == len(order): order, pos = list(rng.permutation(n_prompts)), 0
            p = int(order[pos]); pos += 1
            buf.add(Trajectory(p, [1], rng.integers(0, 1000, 4).tolist(), [-1.] * 4, reward=float(rng.random() < 0.5), version=step)
                    for _ in range(k))
        sample = sampler.sample(buf, slots, k, version=step)
        a, b = repeats(sample.groups)
        rep_prompt += a; rep_group += b
        shares.append(recency_share(sample.stats, slots))
        buf.mark_sync()
    shares = np.array(shares)
    return {'batches_repeating_a_prompt': rep_prompt / steps, 'batches_repeating_a_group': rep_group / steps,
            'recency_slots_per_batch': float(shares.mean() * slots), 'batches_without_recency_slot': float((shares == 0).mean())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--samplers', default=None)
    ap.add_argument('--out', default=None)
    a = ap.parse_args()
    S = load_samplers(a.samplers)
    cases = {  # (prompts in the task, prompts refreshed per sync, slots per batch, k, m)
        'main job (100 prompts, 4 refreshed per sync, 4 slots, K 8, m 0.95)': (100, 4, 4, 8, 0.95),
        'main job, 2 searches per step (8 refreshed)': (100, 8, 4, 8, 0.95),
        'GSM8K-like (8 refreshed, 7 slots, K 20, m 0.95)': (7473, 8, 7, 20, 0.95),
        'main job, 0-1 searches per step (0 or 4 refreshed, 4 slots, K 8, m 0.95)': (5440, [0, 4], 4, 8, 0.95),
        'GSM8K preset (3 refreshed per sync, 7 slots, K 20, m 0.95)': (7473, 3, 7, 20, 0.95),
    }
    out = {}
    for name, (n, r, b, k, m) in cases.items():
        out[name] = {'tba_kit': simulate(S.MixedSampler(p_recent=m, seed=0), n, r, b, k),
                     'paper get_batch': simulate(PaperBatch(m, seed=0), n, r, b, k)}
        print(name)
        for who, res in out[name].items():
            print(f"  {who:16s} repeats a prompt in {100 * res['batches_repeating_a_prompt']:5.2f}% of batches, "
                  f"a whole group in {100 * res['batches_repeating_a_group']:5.2f}%; recency slots per batch {res['recency_slots_per_batch']:.2f} "
                  f"(m x slots = {m * b:.2f}), batches without one {100 * res['batches_without_recency_slot']:.1f}%")
    if a.out:
        Path(a.out).write_text(json.dumps({**provenance(), 'samplers': a.samplers or 'tba_kit.samplers', 'cases': out}, indent=1))


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): per simulated job, the share of batches repeating a prompt or a whole group, tba_kit's sampler against the paper's get_batch"
    who = 'tba_kit' if rec['samplers'] == 'tba_kit.samplers' else f"tba_kit ({rec['samplers']})"
    out = [{'claim': f"{name}: batches repeating a prompt, and a whole group, {who} vs the paper's get_batch (2,000 batches)",
            'value': f"{r['tba_kit']['batches_repeating_a_prompt']:.2%}, {r['tba_kit']['batches_repeating_a_group']:.2%} vs "
                     f"{r['paper get_batch']['batches_repeating_a_prompt']:.2%}, {r['paper get_batch']['batches_repeating_a_group']:.2%}"}
           for name, r in rec['cases'].items()]
    return out + [{'claim': f"{name}: recency slots per batch, {who} vs the paper's get_batch",
                   'value': f"{r['tba_kit']['recency_slots_per_batch']:.2f} vs {r['paper get_batch']['recency_slots_per_batch']:.2f}"}
                  for name, r in rec['cases'].items() if 'recency_slots_per_batch' in r['tba_kit']]


if __name__ == '__main__': main()
