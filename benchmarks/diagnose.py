"""Why sampled reward and greedy accuracy can move apart: for a finished run's policy and the untrained model, on the
run's training prompts and on its held-out prompts, the greedy accuracy, the accuracy of K sampled completions
(temperature 1: what the batch reward measures), and the most common greedy answers. Prints a table and writes
benchmarks/results/diagnose_<run>.json.

    python benchmarks/diagnose.py RUN_DIR [--prompts 100] [--k 8]
"""
import argparse, collections, json, sys
from pathlib import Path

import torch

from tba_kit.config import Config
from tba_kit.checkpoints import find_checkpoint
from tba_kit.build import make_policy
from tba_kit.models import require
from tba_kit.generation import generate_completions
from tba_kit.tasks import encode_prompts
from tba_kit.tasks import last_number, make_task

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import provenance  # noqa: E402


def measure(model, tok, prompts, k, max_new_tokens) -> dict:
    pids = encode_prompts(tok, [p.messages for p in prompts])
    greedy = [tok.decode(g[0][0], skip_special_tokens=True) for g in generate_completions(model, tok, pids, greedy=True, max_new_tokens=max_new_tokens)]
    samples = generate_completions(model, tok, pids, k=k, max_new_tokens=max_new_tokens)
    right = lambda text, p: last_number(text) == p.fields['answer']
    sampled = [sum(right(tok.decode(c, skip_special_tokens=True), p) for c, _ in g) / k for g, p in zip(samples, prompts)]
    answers = collections.Counter(last_number(t) for t in greedy)
    return {'greedy_accuracy': sum(right(t, p) for t, p in zip(greedy, prompts)) / len(prompts),
            'sampled_accuracy': sum(sampled) / len(sampled), 'top_greedy_answers': answers.most_common(5)}


def main(a):
    torch.set_num_threads(2); torch.manual_seed(0)
    ck = find_checkpoint(a.run)
    cfg = Config.from_dict(json.loads((ck / 'config.json').read_text()))
    task = make_task(cfg.task, **cfg.task_args)
    splits = {'train': list({p.text(): p for p in task.prompts('train')}.values())[:a.prompts], 'held-out': task.prompts('test')[:a.prompts]}
    model, tok = make_policy(cfg)
    res = {'run': str(a.run), 'checkpoint': str(ck)}
    for when in ('untrained', 'trained'):
        if when == 'trained': require('safetensors.torch', 'pip install safetensors').load_model(model, str(ck / 'policy.safetensors'))
        for split, prompts in splits.items():
            res[f'{when}/{split}'] = m = measure(model.eval(), tok, prompts, a.k, cfg.max_new_tokens)
            print(f"{when:9} {split:8} ({len(prompts)} prompts): greedy {m['greedy_accuracy']:.1%}, sampled {m['sampled_accuracy']:.1%}, "
                  f"greedy answers {m['top_greedy_answers']}", flush=True)
    out = Path(__file__).parent / 'results' / f"diagnose_{Path(a.run).name}.json"
    out.parent.mkdir(exist_ok=True); out.write_text(json.dumps({**provenance(), **res}, indent=1))


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): greedy and sampled accuracy of the untrained and the trained policy, on training and held-out prompts"
    return [{'claim': f"{Path(rec['run']).name}, {when} policy, {split} prompts: greedy accuracy vs the accuracy of sampled completions (temperature 1)",
             'value': f"{m['greedy_accuracy']:.1%} vs {m['sampled_accuracy']:.1%}"}
            for when in ('untrained', 'trained') for split in ('train', 'held-out') if (m := rec.get(f'{when}/{split}'))]


if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('run'); ap.add_argument('--prompts', type=int, default=100); ap.add_argument('--k', type=int, default=8)
    main(ap.parse_args())
