"Two real asynchronous steps of the quickstart on SmolLM2-135M-Instruct (a searcher process and the trainer)."
import json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quickstart_two_async_steps_on_smollm2(tmp_path):
    cmd = [sys.executable, '-m', 'tba_kit.cli', 'train', 'configs/quickstart.yaml', '--steps=2', '--k=4', '--prompts_per_step=2',
           '--prefill=8', '--eval_limit=8', '--eval_every=0', '--checkpoint_every=0', '--no-progress', f'--out_dir={tmp_path}']
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads((tmp_path / 'summary.json').read_text())
    assert summary['steps'] == 2 and 0 <= summary['eval_after']['eval/accuracy'] <= 1
    rows = [json.loads(l) for l in open(tmp_path / 'metrics.jsonl')]
    steps = [r for r in rows if 'train/step' in r]
    assert [r['train/step'] for r in steps] == [1, 2]
    for r in steps:
        assert r['search/tokens_per_s'] > 0 and r['sync/seconds'] > 0 and r['loss/tb'] >= 0
    assert (tmp_path / 'checkpoints' / 'step_000002' / 'policy.safetensors').exists()
