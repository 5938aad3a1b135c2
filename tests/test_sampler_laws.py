"""The samplers' laws, checked by counting over many seeded draws: the share of recency slots is m; recency prompts are
uniform over the latest sync's prompts and cycle through them; reward slots follow softmax(inv_temp * r) without
replacement; a batch never holds a prompt (or a group) twice while the buffer has enough distinct prompts."""
import itertools, math, random

import numpy as np
import pytest

from tba_kit.buffer import ReplayBuffer
from tba_kit.core import Trajectory
from tba_kit.samplers import MixedSampler, RecencySampler, RewardSampler, StalenessCap, UniformSampler


def traj(pid, i, reward=0., version=0):
    return Trajectory(pid, [1], [i + 2], [-1.], reward=reward, version=version)


def synced_buffer(n_old=10, n_new=6, per_prompt=12):
    "n_old prompts searched before the latest sync, then n_new prompts (some old, some not) refreshed after it"
    buf = ReplayBuffer()
    buf.add(traj(f'old{j}', i) for j in range(n_old) for i in range(per_prompt))
    buf.mark_sync()
    new = [f'old{j}' for j in range(n_new // 2)] + [f'new{j}' for j in range(n_new - n_new // 2)]
    buf.add(traj(p, 100 + i, version=1) for p in new for i in range(per_prompt))
    return buf, new


@pytest.mark.parametrize('m', [0.0, 0.3, 0.5, 0.95, 1.0])
def test_share_of_recency_slots_is_m(m):
    buf, _ = synced_buffer()
    s = MixedSampler(p_recent=m, seed=1)
    recent = sum(s.sample(buf, 7, 4).stats.get('sample/recent_slots', 0) for _ in range(1000))
    sd = math.sqrt(7000 * m * (1 - m))
    assert abs(recent - 7000 * m) <= 4 * sd + 1e-9, (recent, 7000 * m, sd)


def test_recency_prompts_are_uniform_over_the_latest_sync_and_cycle():
    buf, new = synced_buffer(n_new=6)
    s, seen = RecencySampler(seed=0), []
    for _ in range(600): seen += [g[0].prompt_id for g in s.sample(buf, 4, 3).groups]
    assert set(seen) == set(new)  # only the prompts refreshed since the sync
    for start in range(0, len(seen) - 6, 6):  # without replacement: each window of one cycle holds every prompt once
        assert sorted(seen[start:start + 6]) == sorted(new), seen[start:start + 6]
    counts = np.array([seen.count(p) for p in new])
    assert counts.max() - counts.min() <= 1
    first = [RecencySampler(seed=sd).sample(buf, 1, 3).groups[0][0].prompt_id for sd in range(1200)]
    freq = np.array([first.count(p) for p in new]) / 1200  # the cycle's starting point is uniform
    assert np.abs(freq - 1 / 6).max() < 4 * math.sqrt(1 / 6 * 5 / 6 / 1200), freq


def test_a_new_sync_period_starts_a_new_pool():
    buf, new = synced_buffer(n_new=6)
    s = RecencySampler(seed=0)
    s.sample(buf, 4, 3)  # four of six drawn in this period
    buf.mark_sync()
    buf.add(traj('late', 200 + i, version=2) for i in range(5))
    assert {g[0].prompt_id for g in s.sample(buf, 1, 3).groups} == {'late'}


def _inclusion(p, k):
    "Exact probability that each item is among k drawn without replacement with weights p (successive sampling)"
    n, inc = len(p), np.zeros(len(p))
    for order in itertools.permutations(range(n), k):
        pr, left = 1., 1.
        for i in order: pr, left = pr * p[i] / left, left - p[i]
        for i in order: inc[i] += pr
    return inc


@pytest.mark.parametrize('inv_temp', [0., 1., 3.])
def test_reward_slots_follow_softmax_without_replacement(inv_temp):
    rewards = [0., 0.5, 1., 2.]
    buf = ReplayBuffer()
    buf.add(traj('p', i, r) for i, r in enumerate(rewards))
    p = np.exp(inv_temp * np.array(rewards)); p /= p.sum()
    for k, draws in ((1, 8000), (2, 8000)):
        s = RewardSampler(inv_temp=inv_temp, seed=k)
        hits = np.zeros(4)
        for g in s.sample(buf, draws, k).groups:
            ids = [t.completion_ids.item() - 2 for t in g]
            assert len(set(ids)) == k  # without replacement
            hits[ids] += 1
        want = _inclusion(p, k)
        assert np.abs(hits / draws - want).max() < 4 * np.sqrt(want * (1 - want) / draws).max() + 1e-3, (hits / draws, want)


@pytest.mark.parametrize('seed', range(30))
def test_no_prompt_or_group_twice_in_a_batch(seed):
    "Random buffers and sync periods: while the buffer has at least B prompts, a batch's slots are B distinct prompts"
    rng = random.Random(seed)
    buf, samplers = ReplayBuffer(capacity_per_prompt=20), [MixedSampler(rng.random(), rng.choice([0., 1.]), seed=seed),
                                                          UniformSampler(seed=seed), RewardSampler(2., seed=seed), RecencySampler(seed=seed)]
    for v in range(40):
        prompts = rng.sample(range(30), rng.randrange(1, 6))
        buf.add(traj(f'p{p}', rng.randrange(40), rng.random(), version=v) for p in prompts for _ in range(rng.randrange(1, 10)))
        if rng.random() < 0.5: buf.mark_sync()
        B = rng.randrange(1, 8)
        for s in samplers:
            stats = s.sample(buf, B, 3, version=v).stats
            if len(buf.prompts()) >= B: assert stats['sample/repeated_prompts'] == 0 and stats['sample/duplicate_groups'] == 0, (type(s), B, stats)
            assert stats['sample/duplicate_groups'] <= stats['sample/repeated_prompts']


def test_staleness_cap_sees_only_fresh_new_completions():
    buf, new = synced_buffer()
    s = StalenessCap(RecencySampler(seed=0), max_staleness=0)
    groups = s.sample(buf, 6, 4, version=1).groups
    assert {t.version for g in groups for t in g} == {1} and {g[0].prompt_id for g in groups} == set(new)


def _feed(steps, searches, prompts_per_search, k, slots, m, sync_every=1, n_prompts=5440, seed=0, warmup=8):
    "The loop's feeding in miniature: `searches(rng)` searches of `prompts_per_search` new prompts (k completions each) land per step, a batch of `slots` is drawn, weights sync every `sync_every` steps; the share of recency slots per batch after `warmup` steps"
    rng, buf, s, shares = np.random.default_rng(seed), ReplayBuffer(), MixedSampler(p_recent=m, seed=seed), []
    for step in range(steps):
        for _ in range(searches(rng) if step >= 2 else 4):  # a prefill of a few searches first, as the loop's
            for p in rng.choice(n_prompts, prompts_per_search, replace=False):
                buf.add(traj(int(p), int(rng.integers(1000)), float(rng.random() < 0.5), version=step) for _ in range(k))
        stats = s.sample(buf, slots, k, version=step).stats
        if step >= warmup: shares.append(stats['sample/recent_fraction'])
        if (step + 1) % sync_every == 0: buf.mark_sync()
    return np.array(shares)


@pytest.mark.parametrize('regime', ['main job: 0-1 searches of 4 prompts a step', 'GSM8K preset: 3 prompts a sync, 7 slots, sync_every 2'])
def test_share_of_recency_slots_is_m_when_fewer_prompts_were_refreshed_than_slots(regime):
    "The issue's regimes, where the latest sync refreshed fewer prompts than a batch wants: recency slots reach back to earlier syncs' prompts, so their share is still m"
    m = 0.95
    if regime.startswith('main'): shares, slots = _feed(1500, lambda rng: int(rng.integers(2)), 4, 8, 4, m), 4
    else: shares, slots = _feed(1500, lambda rng: 1, 3, 20, 7, m, sync_every=2), 7
    n = len(shares) * slots
    assert abs(shares.mean() - m) <= 4 * math.sqrt(m * (1 - m) / n), (shares.mean(), m)
    assert (shares == 0).mean() < 0.01  # a batch without a recency slot: (1 - m)^slots, not a quarter of them


def test_recency_reaches_back_over_periods_in_order():
    "Two prompts refreshed at the latest sync, three slots: the third takes a prompt of the sync before, the one before that only when needed"
    buf = ReplayBuffer()
    for v, ps in enumerate([['a', 'b'], ['c', 'd'], ['e', 'f']]):
        buf.add(traj(p, 10 * v + i, version=v) for p in ps for i in range(4))
        if v < 2: buf.mark_sync()
    s = RecencySampler(seed=0)
    for _ in range(20):
        sample = s.sample(buf, 3, 2, version=2)
        ids = [g[0].prompt_id for g in sample.groups]
        assert set(ids[:2]) == {'e', 'f'} and ids[2] in ('c', 'd'), ids
        assert sample.stats['sample/recent_fraction'] == 1 and sample.stats['sample/recent_reached_back'] == 1
        assert all(t.version == 1 for t in sample.groups[2])  # the reached-back slot takes that period's new completions
    assert {g[0].prompt_id for g in s.sample(buf, 6, 2, version=2).groups} == set('abcdef')
    few = ReplayBuffer(recent_window=1)
    few.add(traj('a', i) for i in range(4)); few.mark_sync(); few.add(traj('b', 10 + i, version=1) for i in range(4))
    assert RecencySampler(seed=0).sample(few, 2, 2, version=1).stats['sample/recent_fraction'] == 0.5  # window 1: the paper's pool only
