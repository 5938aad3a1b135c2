"Random operation sequences against a plain reference model of the buffer's rules, and exact checkpoint round trips."
import io, random

import pytest
import torch

from tba_kit.buffer import ReplayBuffer
from tba_kit.core import Trajectory
from tba_kit.samplers import MixedSampler, StalenessCap, UniformSampler


class ReferenceBuffer:
    "The rules, written as slowly and plainly as possible: a list of (seq, prompt, tokens, trajectory)"
    def __init__(self, cap, max_size):
        self.cap, self.max_size, self.rows, self.seq = cap, max_size, [], 0

    def add(self, t):
        toks = tuple(t.completion_ids.tolist())
        self.rows = [r for r in self.rows if not (r[1] == t.prompt_id and r[2] == toks)]
        self.rows.append((self.seq, t.prompt_id, toks, t))
        self.seq += 1
        same = [r for r in self.rows if r[1] == t.prompt_id]
        if len(same) > self.cap: self.rows.remove(same[0])
        while self.max_size is not None and len(self.rows) > self.max_size: self.rows.pop(0)

    def group(self, pid): return [r[3] for r in self.rows if r[1] == pid]
    def prompts(self): return {r[1] for r in self.rows}


def random_traj(rng, n_prompts=6, vocab=3):
    toks = [rng.randrange(vocab) for _ in range(rng.randrange(1, 4))]
    return Trajectory(f'p{rng.randrange(n_prompts)}', [7], toks, [-1.] * len(toks), reward=rng.random(), version=rng.randrange(10))


@pytest.mark.parametrize('seed', range(20))
@pytest.mark.parametrize('cap,max_size', [(1, None), (4, None), (4, 9), (100, 25)])
def test_buffer_matches_reference_model(seed, cap, max_size):
    rng = random.Random(seed)
    buf, ref = ReplayBuffer(capacity_per_prompt=cap, max_size=max_size), ReferenceBuffer(cap, max_size)
    for _ in range(60):
        batch = [random_traj(rng) for _ in range(rng.randrange(1, 8))]
        buf.add(batch)
        for t in batch: ref.add(t)
        if rng.random() < 0.2: buf.mark_sync()
        assert len(buf) == len(ref.rows) == sum(len(buf.group(p)) for p in buf.prompts())
        assert set(buf.prompts()) == ref.prompts()
        for p in buf.prompts():
            assert buf.group(p) == ref.group(p)  # same objects, same order (oldest first)
            keys = [tuple(t.completion_ids.tolist()) for t in buf.group(p)]
            assert len(keys) == len(set(keys)) <= cap
            assert list(buf.rewards(p)) == [t.reward for t in buf.group(p)]
    assert len(buf._order) <= 2 * len(buf) + 1024 + 8  # dead entries get compacted


def _state_bytes(buf):
    f = io.BytesIO()
    torch.save(buf.state_dict(), f)
    return f.getvalue()


@pytest.mark.parametrize('seed', range(5))
def test_checkpoint_round_trip_resumes_identically(seed):
    "Save buffer and sampler mid-run, restore into fresh objects: both runs then produce identical batches and state"
    rng = random.Random(seed)
    buf, sampler = ReplayBuffer(capacity_per_prompt=5, max_size=30), StalenessCap(MixedSampler(0.5, 2.0, seed=seed), 6)
    for v in range(20):
        buf.add(random_traj(rng) for _ in range(6))
        buf.mark_sync()
        sampler.sample(buf, 4, 3, version=9)
    f = io.BytesIO()
    torch.save({'buffer': buf.state_dict(), 'sampler': sampler.state_dict()}, f)
    f.seek(0)
    state = torch.load(f, weights_only=False)
    buf2, sampler2 = ReplayBuffer(), StalenessCap(MixedSampler(0.5, 2.0, seed=12345), 6)
    buf2.load_state_dict(state['buffer'])
    sampler2.load_state_dict(state['sampler'])
    rng_a, rng_b = random.Random(99), random.Random(99)
    for _ in range(10):
        buf.add(random_traj(rng_a) for _ in range(5))
        buf2.add(random_traj(rng_b) for _ in range(5))
        a, b = sampler.sample(buf, 4, 3, version=9), sampler2.sample(buf2, 4, 3, version=9)
        key = lambda s: [[(t.prompt_id, t.completion_ids.tolist(), t.reward, t.version) for t in g] for g in s.groups]
        assert key(a) == key(b)
        assert a.stats == b.stats
    # the two buffers received equal but separately created trajectories: all fields match except the wall-clock 'created'
    sa, sb = buf.state_dict(), buf2.state_dict()
    sa['rows'].pop('created'); sb['rows'].pop('created')
    assert _same(sa, sb)


def _same(a, b):
    if isinstance(a, torch.Tensor): return a.dtype == b.dtype and torch.equal(a.nan_to_num(), b.nan_to_num())
    if isinstance(a, dict): return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list): return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def test_empty_buffer_state_round_trips():
    buf = ReplayBuffer(capacity_per_prompt=3, max_size=10)
    buf2 = ReplayBuffer()
    buf2.load_state_dict(buf.state_dict())
    assert len(buf2) == 0 and buf2.max_size == 10 and buf2.capacity_per_prompt == 3
    with pytest.raises(ValueError, match='pre-fill'):
        UniformSampler(seed=0).sample(buf2, 1, 1)
