"Regressions of the orchestrator redesign: unique weight snapshots, objectives' declared needs, a sampler with nothing eligible."
import asyncio, json

import pytest
import torch

import tba_kit.tasks as T
from tba_kit.config import Config
from tba_kit.build import build
from tba_kit.parts import check_parts
from tba_kit.loop import Run, run
from tba_kit.tasks import PromptTask, completion_text


def vowels(prompts, completions, **kw):
    return [sum(ch in 'aeiou' for ch in completion_text(c)) / max(len(completion_text(c)), 1) for c in completions]


def word0_scored_once(prompts, completions, **kw):
    "Scores every completion, except that prompt 'Say word 0' keeps only its first one per call (the rest are unscorable)"
    out, seen = [], False
    for p, r in zip(prompts, vowels(prompts, completions)):
        first = p[-1]['content'] == 'Say word 0' and not seen
        seen |= p[-1]['content'] == 'Say word 0'
        out.append(r if p[-1]['content'] != 'Say word 0' or first else None)
    return out


for name, fn in [('o_vowels', vowels), ('o_shrink', word0_scored_once)]:
    T.TASKS[name] = (lambda fn=fn: lambda **kw: PromptTask([f'Say word {i}' for i in range(6)], fn, test=['Say a word']))()

TINY = dict(model='tiny', k=4, prompts_per_step=2, search_prompts=2, max_new_tokens=6, eval=False, prefill=8,
            precision='fp32', searcher_dtype='float32', lr=1e-3, placement='inline')


def test_ppo_refuses_groups_of_one_before_any_model_loads():
    "Bug: `objective: grpo, k: 1` passed validation and failed at step 1 (group advantages of one completion are 0)"
    with pytest.raises(ValueError, match="config field 'k': 'grpo' compares the completions"): check_parts(Config(objective='grpo', k=1))
    check_parts(Config(objective='tb', k=1))  # TB learns log Z and takes single completions


def test_sync_ppo_drops_groups_shrunk_to_one_by_unscorable_completions(tmp_path):
    "Bug: in sync mode a group left with one scored completion reached PPO, which raised"
    s = asyncio.run(run(**TINY, task='o_shrink', objective='grpo', mode='sync', steps=3, out_dir=str(tmp_path), progress=False))
    assert s.steps == 3
    rows = [json.loads(l) for l in open(tmp_path / 'metrics.jsonl')]
    assert sum(r.get('search/unscored', 0) for r in rows) > 0  # prompt 0 came up and lost completions


def test_nothing_fresh_enough_means_waiting_for_data(tmp_path):
    "Bug: `max_staleness: 0` made the sampler raise at step 2 (nothing at the new version yet) and the async run died"
    s = asyncio.run(run(**TINY, task='o_vowels', mode='async', max_staleness=0, steps=4, out_dir=str(tmp_path), progress=False))
    assert s.steps == 4
    rows = [r for r in map(json.loads, open(tmp_path / 'metrics.jsonl')) if 'train/step' in r]
    assert [r['buffer/staleness_max'] for r in rows] == [0, 0, 0, 0]  # every step trained on its own version's data


@pytest.mark.slow
def test_resumed_reference_snapshot_is_not_overwritten_by_the_policy(tmp_path):
    "Bug: on resume with ref_reset_every and the reference on the searchers, the reference and policy snapshots shared a name"
    kw = dict(TINY, task='o_vowels', mode='sync', ref_reset_every=3, ref_on='searcher', out_dir=str(tmp_path))
    asyncio.run(run(**kw, steps=4, progress=False))  # reference reset at step 3, policy moves on at step 4

    async def resume():
        r = Run(build(Config(**kw, steps=5), progress=False), progress=False)
        await r(resume=tmp_path)
        return r
    r = asyncio.run(resume())
    ref, policy = dict(r.searchers[0]._gen.ref.named_parameters()), dict(r.trainer.model.named_parameters())
    for n, p in r.trainer.ref.named_parameters():
        assert torch.equal(ref[n], p), n  # the searcher's reference is the trainer's (as of step 3) ...
    assert max((ref[n] - p).abs().max().item() for n, p in policy.items()) > 1e-4  # ... not the current policy
