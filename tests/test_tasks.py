"The paper's tasks end to end on a CPU: a few real loop steps with small settings, and their shipped configs validate."
import asyncio, json
from pathlib import Path

import pytest

from tba_kit.config import Config
from tba_kit.loop import run

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize('name', ['quickstart', 'gsm8k'])
def test_shipped_configs_validate(name):
    "Every shipped config passes validation as written (no model is loaded)"
    Config.load(ROOT / 'configs' / f'{name}.yaml')


def test_gsm8k_smoke(tmp_path):
    "GSM8K (the project's fixture) through the async loop on the tiny model: trains, evaluates pass@1"
    summary = asyncio.run(run(dict(model='tiny', task='gsm8k', task_args=dict(source='fixture'), k=4, prompts_per_step=2,
                                   search_prompts=2, max_new_tokens=8, eval_max_new_tokens=8, prefill=8, precision='fp32',
                                   searcher='thread', steps=3, out_dir=str(tmp_path / 'run')), progress=False))
    assert summary.steps == 3
    assert set(summary.eval_after) >= {'eval/pass@1', 'eval/answered'}
    rows = [json.loads(l) for l in open(tmp_path / 'run' / 'metrics.jsonl')]
    assert sum('train/step' in r for r in rows) == 3
