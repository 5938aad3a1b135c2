"""Two fidelity numbers on the default model (SmolLM2-135M-Instruct, fp32, arithmetic prompts):

1. the per-token gap between the searcher's behaviour log-probs and the trainer's log-probs of the same completions
   at step 0, sampling at T = 0.7, with tempered log-probs (logprob_temperature = T, the default) and raw ones (1.0,
   what tba_kit computed before);
2. Dr. GRPO's loss and gradient norm on one batch, as one micro-batch and as one micro-batch per group, with the
   constant normaliser (max_new_tokens, now) and with the width of the batch the objective sees (before).

Usage: python benchmarks/fidelity.py [--out benchmarks/results/fidelity.json]
"""
import argparse, asyncio, copy, json, sys
from pathlib import Path

import torch

from tba_kit.core import collate
from tba_kit.models import load_model
from tba_kit.objectives import PPO
from tba_kit.searchers import HFSearcher
from tba_kit.tasks import TASKS
from tba_kit.trainer import Trainer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import provenance  # noqa: E402


def logprob_gap(model, tok, batch, temperature):
    tr = Trainer(copy.deepcopy(model), PPO('grpo'), precision='fp32', temperature=temperature)
    with torch.no_grad(): lp, _ = tr._logprobs(tr.model, batch)
    gap = (lp - batch.behaviour_logprobs)[batch.completion_mask].abs()
    return {'max': gap.max().item(), 'mean': gap.mean().item()}


def dr_grpo(model, batch, rows, max_tokens):
    "Loss and gradient norm of one step's gradient; max_tokens=None: the width of each micro-batch (the former normaliser)"
    tr = Trainer(copy.deepcopy(model), PPO('dr_grpo', max_tokens=max_tokens or 1), precision='fp32', micro_batch_rows=rows, max_grad_norm=None, lr=0.)
    if max_tokens is None:  # the former rule: divide by the width of whatever (micro-)batch the objective is handed
        tr.objective._reduce = lambda losses, mask: losses.sum() / (len(losses) * mask.shape[1])
    norms = []
    tr.optimizer.register_step_pre_hook(lambda opt, *a: norms.append(torch.cat([p.grad.flatten() for p in tr.params]).norm().item()))
    m = tr.step(batch)
    return {'loss': m['loss/ppo'], 'grad_norm': norms[0]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--out', default=None)
    a = ap.parse_args()
    torch.manual_seed(0)
    model, tok = load_model('smollm2-135m-instruct', dtype='float32')
    task = TASKS.get('arithmetic')(n_train=8, n_test=8, min_terms=2, max_terms=2, answer_prefix='The answer is')
    prompts, max_new = task.prompts('train')[:4], 16
    s = HFSearcher(copy.deepcopy(model), tok, reward=task.reward, max_new_tokens=max_new, temperature=0.7)
    res = asyncio.run(s.search(prompts, k=4))
    batch = collate([[t for t in res if t.prompt_id == p.id] for p in prompts], pad_id=tok.pad_token_id)
    out = {'logprob_gap_T0.7': {'tempered (now)': logprob_gap(model, tok, batch, 0.7), 'raw (before)': logprob_gap(model, tok, batch, 1.0)},
           'dr_grpo': {}}
    for rule, mt in (('constant max_new_tokens (now)', max_new), ('batch width (before)', None)):
        out['dr_grpo'][rule] = {f'{rows} rows per micro-batch': dr_grpo(model, batch, rows, mt) for rows in (len(batch), 4)}
    print(json.dumps(out, indent=1))
    if a.out: Path(a.out).write_text(json.dumps({**provenance(), **out}, indent=1))  # provenance's machine


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): the searcher-trainer log-prob gap with tempered and raw log-probs; Dr. GRPO's gradient norm by micro-batching, per normaliser"
    gap = rec['logprob_gap_T0.7']
    out = [{'claim': f"per-token |searcher - trainer| log-prob at step 0, sampling at T = 0.7, {k} log-probs (max, mean)", 'value': f"{g['max']:.3g}, {g['mean']:.3g}"} for k, g in gap.items()]
    for rule, by in rec['dr_grpo'].items():
        out.append({'claim': f"Dr. GRPO's gradient norm on one batch, normaliser {rule}: {' vs '.join(by)}", 'value': ' vs '.join(f"{r['grad_norm']:.4f}" for r in by.values())})
    return out


if __name__ == '__main__': main()
