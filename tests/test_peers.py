"The TRL comparison's smoke mode: TRL's GRPOTrainer trains two steps on the tiny model and is evaluated as tba_kit evaluates (skipped without TRL)."
import json, subprocess, sys
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
    evals = sorted((tmp_path / 'trl' / 'evals').iterdir())
    assert [p.name for p in evals] == ['step_000000.jsonl', 'step_000002.jsonl']
    assert all('correct' in json.loads(l) for l in evals[-1].read_text().splitlines())  # per problem, for intervals
