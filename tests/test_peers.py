"The TRL comparison's smoke mode: TRL's GRPOTrainer trains two steps on the tiny model and is evaluated as tba_kit evaluates (skipped without TRL)."
import json, shutil, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_peer_trl_smoke(tmp_path):
    pytest.importorskip('trl')
    r = subprocess.run([sys.executable, str(ROOT / 'benchmarks' / 'peer_trl.py'), '--smoke', '--out', str(tmp_path / 'trl')],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got['steps'] == 2 and got['evaluations'] == 2, got
    rows = [json.loads(l) for l in open(tmp_path / 'trl' / 'metrics.jsonl')]
    assert sum('train/step' in r for r in rows) == 2  # one row per TRL step, in tba_kit's format
    # a 2-step cosine over 5 minutes: the steps lead the clock, so update 1 at the peak, update 2 at half of it, as tba_kit's trainer
    assert [r['train/lr'] for r in rows if 'train/lr' in r] == pytest.approx([1e-5, 5e-6])
    evals = sorted((tmp_path / 'trl' / 'evals').iterdir())
    assert [p.name for p in evals] == ['step_000000.jsonl', 'step_000002.jsonl']
    assert all('correct' in json.loads(l) for l in evals[-1].read_text().splitlines())  # per problem, for intervals


def _off_policy():
    import importlib.util
    spec = importlib.util.spec_from_file_location('off_policy', ROOT / 'benchmarks' / 'off_policy.py')
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod


def test_steps_to_interpolates_between_evaluations(tmp_path):
    "Steps to an accuracy: linear between the evaluations around the first crossing; None when never reached"
    rows = [{'step': s, 'time/seconds': s, 'eval/accuracy': a} for s, a in [(0, .1), (10, .3), (20, .5), (30, .45)]]
    (tmp_path / 'metrics.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in rows))
    op = _off_policy()
    rec = op.record_of(tmp_path, 12.)  # what a finished run leaves: the analysis reads this, not the run's folder
    assert rec['wall_seconds'] == 12. and [e['step'] for e in rec['evaluations']] == [0, 10, 20, 30]
    assert op.steps_to(rec, .4) == pytest.approx(15.)
    assert op.steps_to(rec, .3) == 10. and op.steps_to(rec, .05) == 0.
    assert op.steps_to(rec, .6) is None


def test_off_policy_smoke(tmp_path):
    "Both arms train on the tiny model; the stale arm's data lags 0, 1, 0, 1, ... versions (sync_every 2), the on-policy arm's 0"
    res = _off_policy().main(['--smoke', '--out_root', str(tmp_path)])
    assert set(res) == {'tb', 'grpo_tis'}
    for obj in res:
        lag = [json.loads(l) for l in open(tmp_path / f'{obj}_lag2_seed0' / 'metrics.jsonl')]
        on = [json.loads(l) for l in open(tmp_path / f'{obj}_on_seed0' / 'metrics.jsonl')]
        assert [r['train/staleness'] for r in lag if 'train/step' in r] == [0., 1.] * 3
        assert [r['train/staleness'] for r in on if 'train/step' in r] == [0.] * 4
        assert not (tmp_path / f'{obj}_lag2_seed0' / 'checkpoints').exists()  # deleted once evaluated
        assert 0 <= res[obj]['on_policy_final'] <= 1 and res[obj]['seeds'] == 1
    for run in tmp_path.glob('*_seed0'): shutil.rmtree(run)  # the run folders gone (a fresh clone): the kept records remain
    assert _off_policy().main(['--smoke', '--out_root', str(tmp_path), '--report']) == res
