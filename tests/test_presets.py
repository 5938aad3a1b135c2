"""The shipped presets carry the paper's run settings: each is compared with a table of the values the paper's code
(github.com/bbartoldson/TBA at commit c6075e2: launch scripts, configs, trainers, and trl 0.9.4's defaults they inherit)
or its text use, and every such line of the YAML names its source in a comment."""
import re
from pathlib import Path

import pytest

from tba_kit.config import Config
from tba_kit.trainer import BetaSchedule

ROOT = Path(__file__).resolve().parents[1]

PAPER = {
    'gsm8k': dict(model='realtreetune/rho-1b-sft-GSM8K', precision='bf16', objective='vargrad', beta=0.014, beta_final=0.004,
                  beta_steps=500, beta_cut=500, k=20, search_k=24, prompts_per_step=7, p_recent=0.95, inv_temp=0.,
                  buffer_capacity=100, sync_every=2, searchers=3, search_prompts=3, prefill=500, max_new_tokens=512,
                  temperature=0.7, logprob_temperature=None, lr=1e-5, lr_schedule='warmup_stable_decay', warmup_steps=50,
                  stable_steps=350, decay_steps=600, steps=700, max_grad_norm=None, micro_batch_rows=20),
    'tldr': dict(model='mnoukhov/pythia410m-sft-tldr', precision='fp32', objective='vargrad', beta=1.0, beta_final=0.05,
                 beta_steps=128, beta_cut=32, k=20, search_k=20, prompts_per_step=8, p_recent=0.5, inv_temp=1.0,
                 buffer_capacity=100, sync_every=10, searchers=3, search_prompts=1, prefill=10000, max_new_tokens=128,
                 temperature=0.7, logprob_temperature=None, lr=3e-6, lr_schedule='linear', steps=256, max_grad_norm=None,
                 micro_batch_rows=20),
    'redteam': dict(objective='vargrad', beta=0.05, beta_final=None, p_recent=0.5, sync_every=10),
}


@pytest.mark.parametrize('name', PAPER)
def test_preset_has_the_papers_values(name):
    cfg = Config.load(ROOT / 'configs' / f'{name}.yaml')
    got = {f: getattr(cfg, f) for f in PAPER[name]}
    assert got == PAPER[name], {f: (got[f], v) for f, v in PAPER[name].items() if got[f] != v}
    assert cfg.logprob_temp == cfg.temperature  # every log-prob tempered as sampled (TRL 0.9.4's default the paper inherits)


@pytest.mark.parametrize('name', PAPER)
def test_every_paper_value_names_its_source(name):
    text = (ROOT / 'configs' / f'{name}.yaml').read_text()
    for field in PAPER[name]:
        line = next((l for l in text.splitlines() if re.match(rf'{field}:', l)), None)
        if line is None: continue  # a default the YAML does not repeat (checked above through Config)
        assert re.search(r'#.*\[(launch|yml|trainer|trl|paper)\]', line), f'{name}.yaml: {line!r} names no source'


def test_the_papers_beta_schedules():
    "GSM8K: 0.014 -> 0.004 linearly in the update number, 0.004 from update 500; TL;DR: 1 - 0.95 (u-1)/128, 0.05 from update 32"
    g, t = (Config.load(ROOT / 'configs' / f'{n}.yaml') for n in ('gsm8k', 'tldr'))
    gb, tb = (BetaSchedule(c.beta, c.beta_final, c.beta_steps, c.beta_cut) for c in (g, t))
    for u in (1, 2, 250, 499, 500, 700):  # the paper's formula for update u (1-based); tba_kit's step = u - 1
        paper = 0.004 * (u - 1) / 500 + 0.014 * (1 - (u - 1) / 500) if u < 500 else 0.004
        assert gb(u - 1) == pytest.approx(paper, rel=1e-12), u
    for u in (1, 2, 31, 32, 33, 256):
        paper = 0.05 * (u - 1) / 128 + 1.0 * (1 - (u - 1) / 128) if u < 32 else 0.05
        assert tb(u - 1) == pytest.approx(paper, rel=1e-12), u
