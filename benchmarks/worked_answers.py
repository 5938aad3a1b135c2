"""Candidates for a task where search costs more than training (issue 22, item 5): the main job's problems (n ± d) with
a reply that works towards the number instead of starting with "The answer is". For each prompt variant, the untrained
model's greedy accuracy, mean accuracy of K samples at T = 1, pass@K and mean completion length on N held-out problems.

    python benchmarks/worked_answers.py [--n 30] [--samples 8] [--max_new_tokens 48]
"""
import argparse, json, sys, time
from pathlib import Path

import torch

from tba_kit.models import fast_dtype, load_model
from tba_kit.generation import generate_completions
from tba_kit.tasks import encode_prompts
from tba_kit.tasks import ArithmeticTask, last_number, same_number

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import provenance  # noqa: E402

VARIANTS = {  # name -> (the reply's start, the steps d)
    'step by step': ("Let's count one step at a time.", (1, 2, 3)),
    'count list, d 1..9': ("Counting one at a time:", tuple(range(1, 10))),
    'no prefix': (None, (1, 2, 3)),
}


def main(a):
    torch.set_num_threads(2)
    dt, _ = fast_dtype('cpu')
    model, tok = load_model('smollm2-135m-instruct', dtype=dt)
    res = {}
    for name, (prefix, steps) in VARIANTS.items():
        task = ArithmeticTask('increments', n_train=100, n_test=a.n, min_value=10, max_value=999, steps=steps, answer_prefix=prefix)
        ps = task.prompts('test')
        pids, gold = encode_prompts(tok, [p.messages for p in ps]), [p.fields['answer'] for p in ps]
        t = time.perf_counter()
        greedy = generate_completions(model, tok, pids, k=1, greedy=True, max_new_tokens=a.max_new_tokens)
        drawn = generate_completions(model, tok, pids, k=a.samples, temperature=1.0, max_new_tokens=a.max_new_tokens)
        sec = time.perf_counter() - t
        right = lambda ids, g: same_number(last_number(tok.decode(ids, skip_special_tokens=True)), g)
        g_ok = [right(grp[0][0], g) for grp, g in zip(greedy, gold)]
        s_ok = [[right(c, g) for c, _ in grp] for grp, g in zip(drawn, gold)]
        lens = [len(c) for grp in drawn for c, _ in grp]
        res[name] = {'greedy': sum(g_ok) / len(g_ok), 'sampled': sum(map(sum, s_ok)) / (len(s_ok) * a.samples),
                     f'pass@{a.samples}': sum(map(any, s_ok)) / len(s_ok), 'mean_tokens': sum(lens) / len(lens),
                     'tokens_per_s': sum(lens) / sec, 'example': tok.decode(greedy[0][0][0], skip_special_tokens=True)}
        print(name, json.dumps(res[name]), flush=True)
    out = Path(__file__).parent / 'results' / 'worked_answers.json'
    out.write_text(json.dumps({**provenance(), 'n': a.n, 'samples': a.samples, 'max_new_tokens': a.max_new_tokens, 'searcher_dtype': str(dt), 'results': res}, indent=1))


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): per reply variant, the untrained model's greedy, sampled and pass@K accuracy and its completions' length"
    k = rec['samples']
    return [{'claim': f"reply variant '{name}', untrained model ({rec['searcher_dtype'].removeprefix('torch.')}), {rec['n']} held-out problems, <= {rec['max_new_tokens']} new tokens: "
                      f"greedy accuracy; mean accuracy of {k} samples at T 1; pass@{k}; mean completion tokens",
             'value': f"{r['greedy']:.1%}; {r['sampled']:.1%}; {r[f'pass@{k}']:.1%}; {r['mean_tokens']:.1f}"} for name, r in rec['results'].items()]


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--n', type=int, default=30)
    ap.add_argument('--samples', type=int, default=8)
    ap.add_argument('--max_new_tokens', type=int, default=48)
    main(ap.parse_args())
