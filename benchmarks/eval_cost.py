"""What the main job's held-out evaluation costs, with the prompts' shared head (the chat template's system prompt and
the instruction, 35 of 50 tokens) computed once per generate call against every row computing it: greedy accuracy
and sampled accuracy (`eval_samples` answers per problem), as the loop evaluates before and after training. Both
ways alternate in one process on the untrained model, in the trainer's dtype (fp32); prints seconds and how many
greedy answers differ between the two, and writes benchmarks/results/eval_cost.json (or --out).

    python benchmarks/eval_cost.py [--threads 2] [--limit 500] [--repeats 1]
"""
import argparse, json, statistics, time
from pathlib import Path

import torch

import tba_kit.searchers as S
from tba_kit.config import Config
from tba_kit.models import load_model
from tba_kit.tasks import make_task


def main(a):
    torch.set_num_threads(a.threads)
    cfg = Config.load(a.config)
    task = make_task(cfg.task, **cfg.task_args)
    model, tok = load_model(cfg.model, dtype='float32')
    shared_head = S._shared_head
    pids = S._encode(tok, [p.messages for p in task.prompts('test')[:a.limit]])
    res = {'cpu_capability': torch.backends.cpu.get_cpu_capability(), 'threads': a.threads, 'problems': len(pids),
           'samples': cfg.eval_samples, 'prompt_tokens': [min(map(len, pids)), max(map(len, pids))], 'shared_head': shared_head(pids)}
    seconds, answers = {'shared head': [], 'every row': []}, {}
    for _ in range(a.repeats):
        for way in seconds:
            S._shared_head = shared_head if way == 'shared head' else (lambda seqs, least=8: 0)
            torch.manual_seed(0)
            t = time.perf_counter()
            out = S.evaluate(model, tok, task, 'test', cfg.eval_max_new_tokens, 64, a.limit, temperature=cfg.logprob_temp, samples=cfg.eval_samples)
            seconds[way].append(time.perf_counter() - t)
            answers[way] = [r['completion'] for r in out['examples']]
            res[f'{way}: accuracy'], res[f'{way}: sampled_accuracy'] = out['eval/accuracy'], out['eval/sampled_accuracy']
            print(f"{way}: {seconds[way][-1]:.1f} s, greedy {out['eval/accuracy']:.1%}, sampled {out['eval/sampled_accuracy']:.1%}", flush=True)
    S._shared_head = shared_head
    res |= {f'{way}: seconds': statistics.median(s) for way, s in seconds.items()}
    res['speed-up'] = res['every row: seconds'] / res['shared head: seconds']
    res['greedy answers that differ'] = sum(x != y for x, y in zip(answers['shared head'], answers['every row']))
    print(json.dumps(res, indent=1))
    Path(a.out).write_text(json.dumps(res, indent=1))


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--config', default='configs/quickstart.yaml')
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--limit', type=int, default=500)
    ap.add_argument('--repeats', type=int, default=1)
    ap.add_argument('--out', default=str(Path(__file__).parent / 'results' / 'eval_cost.json'))
    main(ap.parse_args())
