"Several reward functions through whole runs: each function's mean and std in the metrics rows, with the searchers in the run's process and in worker processes (which score there)."
import asyncio, json

import pytest

from tba_kit.loop import run


def dataset_with_two_rewards(tmp_path, module:str) -> dict:
    "A dataset task of 8 prompts in a JSON Lines file, scored by two reward functions of a module in a file (as a config names them)"
    (tmp_path / 'train.jsonl').write_text(''.join(json.dumps({'prompt': f'Say word {i}', 'letter': 'aeiou'[i % 5]}) + '\n' for i in range(8)))
    (tmp_path / f'{module}.py').write_text("def has_letter(completions, letter, **kw):\n    return [float(l in c) for c, l in zip(completions, letter)]\n"
                                         "def short(completions, **kw):\n    return [float(len(c) < 12) for c in completions]\n")
    rewards = [f"{tmp_path / module}.py:has_letter", f"{tmp_path / module}.py:short"]  # a module name of its own: one file a name
    return dict(task='dataset', task_args=dict(path=str(tmp_path / 'train.jsonl'), reward=rewards, reward_weights=[1., 0.5], test_size=2))


@pytest.mark.parametrize('placement,mode', [('inline', 'async'), ('inline', 'sync'), pytest.param('process', 'async', marks=pytest.mark.process)])
def test_several_rewards_are_each_logged(tmp_path, placement, mode):
    asyncio.run(run(model='tiny', k=4, prompts_per_step=2, search_prompts=2, max_new_tokens=6, prefill=8, precision='fp32', steps=3, mode=mode,
                    placement=placement, eval=False, out_dir=str(tmp_path / 'r'), progress=False,
                    **dataset_with_two_rewards(tmp_path, f'scoring_{placement}_{mode}')))
    rows = [json.loads(l) for l in open(tmp_path / 'r' / 'metrics.jsonl')]
    logged = [r for r in rows if 'rewards/has_letter/mean' in r]
    assert logged and all({'rewards/has_letter/std', 'rewards/short/mean', 'rewards/short/std'} <= set(r) for r in logged), rows
    assert all(0 <= r['rewards/has_letter/mean'] <= 1 and 0 <= r['rewards/short/mean'] <= 1 for r in logged)
    assert all(r['reward/mean'] <= 1.5 for r in rows if 'reward/mean' in r)  # the weighted sum: 1 x has_letter + 0.5 x short
