"""tools/keep_run.py: a finished run's small records kept as data read as the run itself (the figures of the lessons)."""
import json, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY = ['--model=tiny', '--precision=fp32', '--mode=sync', '--searcher_threads=1', '--steps=2', '--time_limit=null', '--eval_every=2',
        '--eval_samples=0', '--prefill=8', '--task_args={divisors: [1, 2], n_test: 4}', '--no-progress']


@pytest.mark.slow
def test_keep_a_run_with_its_answers(tmp_path):
    from tba_kit.viz import answers, buffer_histograms, read_metrics
    run, dest = tmp_path / 'made', tmp_path / 'kept' / 'objective_tb'
    subprocess.run([sys.executable, '-m', 'tba_kit.cli', 'train', 'configs/multiples.yaml', f'--out_dir={run}', *TINY], cwd=ROOT, check=True, capture_output=True)
    subprocess.run([sys.executable, str(ROOT / 'tools' / 'keep_run.py'), str(run), str(dest), '--command', 'tba train configs/multiples.yaml', '--answers'],
                   cwd=ROOT, check=True, capture_output=True)
    assert sorted(f.name for f in dest.iterdir()) == ['answers.json', 'buffer.json', 'config.json', 'examples.jsonl', 'metrics.jsonl', 'provenance.json', 'timeline.jsonl']
    assert read_metrics(dest) == read_metrics(run) and (run / 'checkpoints').exists()  # the run keeps its weights
    cfg = json.loads((dest / 'config.json').read_text())
    assert cfg['out_dir'] == 'runs/objective_tb' and str(tmp_path) not in (dest / 'config.json').read_text()  # no machine path kept
    assert json.loads((dest / 'provenance.json').read_text())['command'] == 'tba train configs/multiples.yaml'
    kept = json.loads((dest / 'buffer.json').read_text())
    assert sum(buffer_histograms(dest).data[0].y) == len(kept['versions']) == len(kept['rewards']) > 0
    got = json.loads((dest / 'answers.json').read_text())
    assert len(got['rows']) == 4 and all(abs(sum(r['policy']) - 1) < 1e-5 and abs(sum(r['target']) - 1) < 1e-5 for r in got['rows'])
    assert len(answers(dest, prompts=2).data) == 4  # policy and target bars for each of two prompts
    steps = {json.loads(l)['step'] for l in (dest / 'examples.jsonl').read_text().splitlines()}
    assert steps == {0, 2}  # answers of the first and the last evaluation
