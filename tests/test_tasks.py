"The paper's tasks end to end on a CPU: a few real loop steps with small settings, and their shipped configs validate."
import asyncio, json, math
from pathlib import Path

import pytest

from tba_kit.config import Config
from tba_kit.loop import run

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize('name', ['quickstart', 'gsm8k', 'tldr', 'redteam'])
def test_shipped_configs_validate(name):
    "Every shipped config passes validation as written (no model is loaded)"
    Config.load(ROOT / 'configs' / f'{name}.yaml')


@pytest.mark.slow
def test_gsm8k_smoke(tmp_path):
    "GSM8K (the project's fixture) through the async loop on the tiny model: trains, evaluates pass@1"
    summary = asyncio.run(run(dict(model='tiny', task='gsm8k', task_args=dict(source='fixture'), k=4, prompts_per_step=2,
                                   search_prompts=2, max_new_tokens=8, eval_max_new_tokens=8, prefill=8, precision='fp32',
                                   placement='inline', steps=3, out_dir=str(tmp_path / 'run')), progress=False))
    assert summary.steps == 3
    assert set(summary.eval_after) >= {'eval/pass@1', 'eval/answered'}
    rows = [json.loads(l) for l in open(tmp_path / 'run' / 'metrics.jsonl')]
    assert sum('train/step' in r for r in rows) == 3


@pytest.mark.slow
def test_tldr_smoke(tmp_path):
    "TL;DR (fixture posts, tiny random reward and gold models) through the async loop: trains, evaluates win rate and perplexity"
    from tba_kit.models import tiny_model
    from tba_kit.tasks import TASKS
    from tba_kit.tldr import TLDRTask, tiny_reward_model
    ref, tok = tiny_model(seed=0)
    TASKS['t_tldr'] = lambda **kw: TLDRTask(tiny_reward_model(0), tiny_reward_model(1), eos_token_id=tok.eos_token_id,
                                            source='fixture', ref_model=ref, ref_tokenizer=tok)
    summary = asyncio.run(run(dict(model='tiny', task='t_tldr', k=4, prompts_per_step=2, search_prompts=2, max_new_tokens=8,
                                   eval_max_new_tokens=8, prefill=8, precision='fp32', placement='inline', steps=3,
                                   p_recent=0.5, inv_temp=1.0, out_dir=str(tmp_path / 'run')), progress=False))
    assert summary.steps == 3
    assert set(summary.eval_after) >= {'eval/win_rate', 'eval/gold_score', 'eval/ref_perplexity'}
    rows = [r for r in map(json.loads, open(tmp_path / 'run' / 'metrics.jsonl')) if 'train/step' in r]
    assert len(rows) == 3 and all(math.isfinite(r['sample/reward_mean']) for r in rows)


@pytest.mark.slow
def test_redteam_smoke(tmp_path, capfd):
    "Red-teaming (tiny attacker, tiny victim answering twice, garak lexicon proxy) through the async loop: trains, ASR and diversity; evaluation reports the victim's phases"
    pytest.importorskip('sentence_transformers')
    from tba_kit.models import tiny_model
    from tba_kit.redteam import RedTeamTask, Victim
    from tba_kit.tasks import TASKS
    victim, tok = tiny_model(seed=5)
    TASKS['t_redteam'] = lambda **kw: RedTeamTask(Victim(victim, tok, n=2, max_new_tokens=6), n_train=6, n_test=3)
    summary = asyncio.run(run(dict(model='tiny', task='t_redteam', k=4, prompts_per_step=2, search_prompts=2, max_new_tokens=8,
                                   eval_max_new_tokens=8, prefill=8, precision='fp32', placement='inline', steps=3, p_recent=0.5,
                                   beta=0.05, out_dir=str(tmp_path / 'run')), progress='lines'))
    assert summary.steps == 3
    assert set(summary.eval_after) >= {'eval/asr', 'eval/toxicity', 'eval/diversity'}
    lines = capfd.readouterr().err
    for phase in ('3 of 3 held-out problems', 'victim answers 3 of 3', 'toxicity scored 3 of 3'): assert f"evaluating at step 3: {phase}" in lines, lines
    assert 'tba_kit: step 1 of 3: reward ' in lines, lines  # without a bar the steps still say where the run is
    rows = [r for r in map(json.loads, open(tmp_path / 'run' / 'metrics.jsonl')) if 'train/step' in r]
    assert len(rows) == 3 and all(math.isfinite(r['sample/reward_mean']) for r in rows)
    # each attack's toxicity is in evals/, and benchmarks/redteam_curves.py reads the curves back from the run folder
    import importlib.util
    spec = importlib.util.spec_from_file_location('redteam_curves', Path(__file__).parents[1] / 'benchmarks' / 'redteam_curves.py')
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    evals = [r for r in map(json.loads, open(tmp_path / 'run' / 'metrics.jsonl')) if 'eval/asr' in r]
    curve = mod.curve(tmp_path / 'run', None)
    assert [e['step'] for e in curve] == [0, 3] and len(curve[-1]['toxicity_each']) == 3
    for e, r in zip(curve, evals):
        assert e['asr'] == r['eval/asr'] and math.isclose(e['toxicity'], r['eval/toxicity']) and math.isclose(e['diversity'], r['eval/diversity'], abs_tol=1e-5)
    assert curve[0]['train_reward'] is None and math.isclose(curve[1]['train_reward'], sum(r['reward/mean'] for r in rows) / 3)
    assert mod.final([curve], 'toxicity')['median'] == curve[-1]['toxicity']
    # benchmarks/redteam_heldout.py evaluates the final policy and the untrained attacker on the same held-out attacks
    spec = importlib.util.spec_from_file_location('redteam_heldout', Path(__file__).parents[1] / 'benchmarks' / 'redteam_heldout.py')
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    argv = ['--runs', f"v={tmp_path / 'run'}", '--n_test', '3', '--name', 'h', '--results', str(tmp_path)]
    mod.main(argv)
    res, each = json.loads((tmp_path / 'h.json').read_text()), {}
    for name in ('untrained', 'v__run'):
        each[name] = [r['toxicity'] for r in map(json.loads, open(tmp_path / 'h' / f'{name}.jsonl'))]
    assert len(each['untrained']) == len(each['v__run']) == 3 and res['untrained']['toxicity_each'] == each['untrained']
    v = res['systems']['v']
    assert math.isclose(v['toxicity']['median'], sum(each['v__run']) / 3)
    assert math.isclose(v['toxicity_gain']['median'], (sum(each['v__run']) - sum(each['untrained'])) / 3)
    stamp = (tmp_path / 'h' / 'v__run.jsonl').stat().st_mtime_ns
    mod.main(argv)  # a rerun reuses the evaluations it finds
    assert (tmp_path / 'h' / 'v__run.jsonl').stat().st_mtime_ns == stamp and json.loads((tmp_path / 'h.json').read_text()) == res
