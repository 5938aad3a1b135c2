"""An upper bound for the quickstart: supervised fine-tuning of SmolLM2-135M-Instruct on the *gold* answers of the
quickstart's training split ("The answer is N."), 32 problems per step, bf16 autocast over fp32 weights, 2 threads.
RL sees the answer only through its own correct samples (about 1 in 8 at the start), so it cannot learn faster than
this. Prints held-out greedy accuracy (first 100 held-out problems) every 25 steps and writes
benchmarks/results/sft_bound.json.

    python benchmarks/sft_bound.py [--lr 1e-4] [--steps 150]
"""
import argparse, json, random, sys, time
from pathlib import Path

import torch

from tba_kit.models import load_model
from tba_kit.evaluation import evaluate
from tba_kit.tasks import ArithmeticTask

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import provenance  # noqa: E402


def main(lr:float, steps:int):
    torch.set_num_threads(2); torch.manual_seed(0); random.seed(0)
    model, tok = load_model('smollm2-135m-instruct', dtype='float32')
    task = ArithmeticTask(n_train=2000, n_test=200)  # the quickstart's task
    train, opt = task.prompts('train'), torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.)
    acc = lambda: evaluate(model, tok, task, limit=100, max_new_tokens=16)['eval/accuracy']
    curve, t0 = [(0, 0., acc())], time.perf_counter()
    print(f"step 0 accuracy {curve[0][2]:.2f}", flush=True)
    for step in range(1, steps + 1):
        seqs, masks = [], []
        for p in random.sample(train, 32):
            prompt = tok.apply_chat_template(p.messages, add_generation_prompt=True, tokenize=False)
            a = tok(prompt, add_special_tokens=False)['input_ids']
            b = tok(prompt + f"The answer is {p.fields['answer']}.{tok.eos_token}", add_special_tokens=False)['input_ids']
            seqs.append(b); masks.append([0] * len(a) + [1] * (len(b) - len(a)))
        L = max(map(len, seqs))
        ids = torch.tensor([s + [tok.pad_token_id] * (L - len(s)) for s in seqs])
        att = torch.tensor([[1] * len(s) + [0] * (L - len(s)) for s in seqs])
        target = torch.tensor([m + [0] * (L - len(m)) for m in masks])[:, 1:]
        with torch.autocast('cpu', dtype=torch.bfloat16): logits = model(input_ids=ids, attention_mask=att).logits.float()
        lp = torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None])[..., 0]
        loss = -(lp * target).sum() / target.sum()
        opt.zero_grad(); loss.backward(); torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0); opt.step()
        if step % 25 == 0:
            curve.append((step, time.perf_counter() - t0, acc()))
            print(f"step {step} train {curve[-1][1]:.0f} s accuracy {curve[-1][2]:.2f}", flush=True)
    out = Path(__file__).parent / 'results' / 'sft_bound.json'
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({**provenance(), 'lr': lr, 'steps': steps, 'rows_per_step': 32, 'curve_step_seconds_accuracy': curve}, indent=1))


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): held-out greedy accuracy of supervised fine-tuning on the gold answers, the quickstart's upper bound"
    curve = rec['curve_step_seconds_accuracy']
    (_, _, a0), (s, t, a) = curve[0], curve[-1]
    return [{'claim': f"SFT on the gold answers (upper bound for the quickstart; lr {rec['lr']:g}, {rec['rows_per_step']} rows a step): held-out greedy accuracy (first 100 problems), step 0 -> step {s}",
             'value': f"{a0:.0%} -> {a:.0%} in {t / 60:.1f} min (wall, its evaluations included)"},
            {'claim': f"SFT on the gold answers: held-out greedy accuracy at steps {', '.join(str(e[0]) for e in curve)}", 'value': ', '.join(f"{e[2]:.0%}" for e in curve)}]


if __name__ == '__main__':
    ap = argparse.ArgumentParser(); ap.add_argument('--lr', type=float, default=1e-4); ap.add_argument('--steps', type=int, default=150)
    a = ap.parse_args(); main(a.lr, a.steps)
