"The precision guard in real runs: searchers whose weights are rounded to bf16 beside an fp32 trainer are probed at one version and named in a warning; matched dtypes stay quiet."
import asyncio, json

import pytest

import tba_kit.tasks as T
from tba_kit.loop import run
from tba_kit.tasks import PromptTask, completion_text
from test_loop import TINY


def distinct(prompts, completions, **kw):  # differs between a random model's completions, so every group has a gradient
    return [len(set(completion_text(c))) / 8 for c in completions]

T.TASKS['t_distinct'] = lambda **kw: PromptTask([f'Say word {i}' for i in range(6)], distinct, test=['Say a word'], name='distinct')

LIMIT = 1e-9  # the tiny model's bf16 copy differs from it by ~1e-7 nats per token (06h_probe); an exact copy by 0


def probes(out) -> list:
    "(version, KL) of every probe result in a run's metrics"
    rows = [json.loads(line) for line in open(out / 'metrics.jsonl')]
    return [(r['sync/precision_version'], r['sync/precision_kl']) for r in rows if 'sync/precision_kl' in r]


@pytest.mark.parametrize('placement', ['inline', pytest.param('process', marks=pytest.mark.process)])
@pytest.mark.parametrize('searcher_dtype', ['bfloat16', 'float32'])
def test_the_guard_fires_on_bf16_searchers_and_stays_quiet_when_dtypes_match(tmp_path, caplog, placement, searcher_dtype):
    kw = dict(TINY, task='t_vowels', mode='sync', placement=placement, eval=False, steps=4, searcher_dtype=searcher_dtype,
              searcher_rounding='nearest', precision_probe_every=2, precision_kl_limit=LIMIT)
    with caplog.at_level('WARNING', logger='tba_kit'):
        asyncio.run(run(out_dir=str(tmp_path), **kw))
    got = probes(tmp_path)
    assert [v for v, _ in got] == [0, 2], got  # every 2 versions, each scored at the version it was sampled at
    warned = [r.message for r in caplog.records if 'do not run the trainer' in r.message]
    if searcher_dtype == 'float32':
        assert all(kl < LIMIT for _, kl in got) and not warned, (got, warned)
    else:
        assert all(kl > LIMIT for _, kl in got), got
        assert len(warned) == 1 and 'trainer fp32, searchers bfloat16 (rounded nearest)' in warned[0] and 'searcher_dtype: float32' in warned[0], warned


@pytest.mark.parametrize('lr, warns', [(1e-3, False), (1e-7, True)])
def test_tba_eval_scores_the_bf16_policy_and_says_when_the_update_does_not_survive(tmp_path, lr, warns):
    "An update far below bf16's step (lr 1e-7) rounds away to the nearest bf16 value: `tba eval --dtype bfloat16` says so; stochastic rounding is offered"
    from tba_kit.cli import evaluate_target
    asyncio.run(run(task='t_distinct', steps=2, mode='sync', placement='inline', eval=False, out_dir=str(tmp_path), **(TINY | dict(lr=lr))))
    near = evaluate_target(str(tmp_path), dtype='bfloat16')
    assert near['dtype'] == 'bfloat16 (rounded nearest)' and 0 <= near['eval/reward'] <= 1
    assert (near['update_survives_bf16_nearest'] < 0.5) == warns and ('warning' in near) == warns, near
    if warns: assert '--rounding stochastic' in near['warning'] and 'float32' in near['warning']
    sto = evaluate_target(str(tmp_path), dtype='bfloat16', rounding='stochastic')
    assert sto['dtype'] == 'bfloat16 (rounded stochastic)'


@pytest.mark.parametrize('precision', ['bf16-mixed', 'fp32'])
def test_a_run_is_evaluated_in_the_precision_it_trains_in(tmp_path, monkeypatch, precision):
    "Before: a bf16-mixed run's fp32 weights were scored in fp32, a policy it never trained (the main job: 25.8% held out, its searchers' reward 0.78)"
    import torch
    import tba_kit.loop as L
    seen, real = [], L.evaluate_policy
    def spy(*a, **kw):
        seen.append(torch.is_autocast_enabled('cpu'))
        return real(*a, **kw)
    monkeypatch.setattr(L, 'evaluate_policy', spy)
    asyncio.run(run(out_dir=str(tmp_path), **(TINY | dict(task='t_vowels', mode='sync', placement='inline', steps=1, precision=precision))))
    assert len(seen) == 2 and all(s == (precision == 'bf16-mixed') for s in seen), seen  # before and after training
