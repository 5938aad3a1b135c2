"Real asynchronous steps of the main job (configs/quickstart.yaml) on SmolLM2-135M-Instruct, as on a CPU without native bf16."
import json, math, os, subprocess, sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.process]

ROOT = Path(__file__).resolve().parents[1]
AVX2 = {'ATEN_CPU_CAPABILITY': 'avx2', 'ONEDNN_MAX_CPU_ISA': 'AVX2'}  # emulates a CPU whose bf16 is slow: fp32 must be chosen


def test_quickstart_async_steps_on_smollm2_choose_fp32_without_native_bf16(tmp_path):
    cmd = [sys.executable, '-m', 'tba_kit.cli', 'train', 'configs/quickstart.yaml', '--steps=3', '--decay_steps=2', '--eval_limit=16', '--eval_every=0',
           '--checkpoint_every=0', '--no-progress', f'--out_dir={tmp_path}']
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=900, env=os.environ | AVX2)
    assert out.returncode == 0, out.stderr[-3000:]
    assert 'precision: trainer fp32' in out.stderr and "searchers float32: the searchers run the fp32 trainer's policy" in out.stderr, out.stderr[-3000:]
    for phase in ('loading the policy', 'starting 1 hf searcher(s) (process)', 'evaluating at step 0: 0 of 16 held-out problems', 'pre-filling the buffer'):
        assert f'tba_kit: {phase}' in out.stderr, phase
    cfg = json.loads((tmp_path / 'config.json').read_text())
    assert (cfg['precision'], cfg['searcher_dtype']) == ('fp32', 'float32')  # the resolved choice is what the run records
    summary = json.loads((tmp_path / 'summary.json').read_text())
    assert summary['steps'] == 3 and 0 <= summary['eval_after']['eval/accuracy'] <= 1
    for when in ('eval_before', 'eval_after'):  # greedy and sampled accuracy, each with its 95% interval over problems
        e = summary[when]
        assert e['eval/accuracy_lo'] <= e['eval/accuracy'] <= e['eval/accuracy_hi'], e
        assert e['eval/sampled_accuracy_lo'] <= e['eval/sampled_accuracy'] <= e['eval/sampled_accuracy_hi'], e
    assert 'tba_kit: step 0: held-out accuracy: greedy' in out.stderr and ', sampled ' in out.stderr  # in the terminal too
    rows = [json.loads(l) for l in open(tmp_path / 'metrics.jsonl')]
    steps = [r for r in rows if 'train/step' in r]
    assert [r['train/step'] for r in steps] == [1, 2, 3]
    trained = [(r['sync/seconds'], r['loss/tb'], r['train/grad_norm'], r['sample/reward_mean']) for r in steps]
    assert all(s > 0 and math.isfinite(l) and math.isfinite(g) for s, l, g, _ in trained), trained
    # the weights moved in every step whose batch held a correct answer (the untrained model is right ~4% of the time, so a
    # short run under load may sample none: then VarGrad has no gradient, since the policy is still its reference)
    assert all(g > 0 for _, _, g, reward in trained if reward > 0), trained
    assert any(r.get('search/tokens_per_s', 0) > 0 for r in steps)
    assert (tmp_path / 'checkpoints' / 'step_000003' / 'policy.safetensors').exists()
    assert len((tmp_path / 'evals' / 'step_000003.jsonl').read_text().splitlines()) == 16  # the greedy answers, to look at
