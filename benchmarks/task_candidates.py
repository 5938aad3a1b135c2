"""Which arithmetic task can the default model learn on two cores? For each candidate family (reasoning-gym, with the
main job's prompt: chat template, the reply started with "The answer is"), the untrained model's greedy accuracy, its
mean accuracy over 8 samples at temperature 1 and pass@8 on held-out problems, with the size of the problem space.
The learnable band: samples are often right (pass@8 high) while greedy is mostly wrong.

Usage: python benchmarks/task_candidates.py [--n 200] [--samples 8] [--out benchmarks/results/task_candidates.json]
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

CANDIDATES = {  # name -> (reasoning-gym dataset, its arguments, problems in the family, max new tokens)
    'chain_sum 1 digit, 2 terms (the old main job)': ('chain_sum', dict(min_digits=1, max_digits=1, min_terms=2, max_terms=2), 200, 4),
    'chain_sum 1 digit, 3 terms': ('chain_sum', dict(min_digits=1, max_digits=1, min_terms=3, max_terms=3), 4000, 4),
    'chain_sum 1 digit, 3-4 terms': ('chain_sum', dict(min_digits=1, max_digits=1, min_terms=3, max_terms=4), 84000, 4),
    'chain_sum 2 digits, 2 terms': ('chain_sum', dict(min_digits=2, max_digits=2, min_terms=2, max_terms=2), 16200, 5),
    'chain_sum 1-2 digits, 2 terms': ('chain_sum', dict(min_digits=1, max_digits=2, min_terms=2, max_terms=2), 19800, 5),
    'chain_sum 2 digits, 3 terms': ('chain_sum', dict(min_digits=2, max_digits=2, min_terms=3, max_terms=3), 2916000, 5),
    'products 1-2 digits': ('products', dict(min_digits=1, max_digits=2, min_terms=2, max_terms=2), 9801, 5),
    'basic_arithmetic 1 digit, 2 terms, + - * /': ('basic_arithmetic', dict(min_digits=1, max_digits=1, min_terms=2, max_terms=2), 2888, 5),
    'basic_arithmetic 1 digit, 2 terms, + - *': ('basic_arithmetic', dict(min_digits=1, max_digits=1, min_terms=2, max_terms=2, operators=('+', '-', '*')), 2166, 5),
    'basic_arithmetic 1 digit, 2 terms, + -': ('basic_arithmetic', dict(min_digits=1, max_digits=1, min_terms=2, max_terms=2, operators=('+', '-')), 1444, 5),
    'basic_arithmetic 1 digit, 3 terms, + -': ('basic_arithmetic', dict(min_digits=1, max_digits=1, min_terms=3, max_terms=3, operators=('+', '-')), 27436, 5),
    'number_sequence 4-5 terms, |values| <= 20, complexity 1': ('number_sequence', dict(min_terms=4, max_terms=5, min_value=-20, max_value=20, max_complexity=1), 10**4, 5),
    'leg_counting 1-2 animals, 1-5 each': ('leg_counting', dict(min_animals=1, max_animals=2, min_instances=1, max_instances=5), 10**4, 5),
    'letter_counting 3-5 words': ('letter_counting', dict(min_words=3, max_words=5), 10**5, 4),
    'simple_equations 2 terms, values 1-20, + -': ('simple_equations', dict(min_terms=2, max_terms=2, min_value=1, max_value=20, operators=('+', '-'), operators_weights=[0.5, 0.5]), 10**4, 5),
    'increments: n +- 1, n 10-999': ('increments', dict(min_value=10, max_value=999, steps=(1,)), 1980, 5),
    'increments: n +- 1, 2, 3, n 10-999 (the main job)': ('increments', dict(min_value=10, max_value=999, steps=(1, 2, 3)), 5940, 5),
    'increments: n +- 1..9, n 10-999': ('increments', dict(min_value=10, max_value=999, steps=tuple(range(1, 10))), 17820, 5),
    'increments: n +- 1, n 10-9999': ('increments', dict(min_value=10, max_value=9999, steps=(1,)), 19980, 6),
}


def measure(model, tok, task, n_samples, max_new, dtype):
    prompts = task.prompts('test')
    pids = encode_prompts(tok, [p.messages for p in prompts])
    gold = [p.fields['answer'] for p in prompts]
    t = time.perf_counter()
    greedy = generate_completions(model, tok, pids, k=1, greedy=True, max_new_tokens=max_new)
    t_greedy = time.perf_counter() - t
    t = time.perf_counter()
    sampled = generate_completions(model, tok, pids, k=n_samples, temperature=1.0, max_new_tokens=max_new)
    t_sampled = time.perf_counter() - t
    right = lambda ids, g: same_number(last_number(tok.decode(ids, skip_special_tokens=True)), g)
    g_ok = [right(grp[0][0], g) for grp, g in zip(greedy, gold)]
    s_ok = [[right(c, g) for c, _ in grp] for grp, g in zip(sampled, gold)]
    answers = [last_number(tok.decode(grp[0][0], skip_special_tokens=True)) for grp in greedy]
    top = max(answers.count(a) for a in set(answers)) / len(answers)
    return {'greedy_accuracy': sum(g_ok) / len(g_ok), 'sampled_accuracy': sum(map(sum, s_ok)) / (len(s_ok) * n_samples),
            f'pass@{n_samples}': sum(map(any, s_ok)) / len(s_ok), 'top_greedy_answer_share': top,
            'greedy_seconds': t_greedy, 'sampled_seconds': t_sampled, 'example': (prompts[0].text()[-120:], tok.decode(greedy[0][0][0]))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--n', type=int, default=200)
    ap.add_argument('--samples', type=int, default=8)
    ap.add_argument('--out', default=None)
    ap.add_argument('--only', nargs='*', default=None, help='names containing any of these words')
    a = ap.parse_args()
    dtype, why = fast_dtype('cpu')
    model, tok = load_model('smollm2-135m-instruct', dtype=dtype)
    print(f"searcher dtype {dtype}: {why}")
    res = {}
    for name, (ds, kw, space, max_new) in CANDIDATES.items():
        if a.only and not any(w in name for w in a.only): continue
        torch.manual_seed(0)
        task = ArithmeticTask(ds, n_train=10, n_test=a.n, answer_prefix='The answer is', **kw)  # increments: a random sample of the family
        res[name] = {'problems_in_family': space, 'max_new_tokens': max_new, **measure(model, tok, task, a.samples, max_new, dtype)}
        r = res[name]
        print(f"{name:48s} space {space:>8d}  greedy {r['greedy_accuracy']:6.1%}  sampled {r['sampled_accuracy']:6.1%}  "
              f"pass@{a.samples} {r[f'pass@{a.samples}']:6.1%}  top answer {r['top_greedy_answer_share']:5.1%}  "
              f"({r['greedy_seconds']:.0f} s greedy, {r['sampled_seconds']:.0f} s sampled)", flush=True)
    if a.out: Path(a.out).write_text(json.dumps({**provenance(), 'dtype': str(dtype), 'n': a.n, 'candidates': res}, indent=1))


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): the untrained model's greedy, sampled and pass@k accuracy on the main job's task families and on the candidates with the highest pass@k"
    cs = rec['candidates']
    k = next(key for key in next(iter(cs.values())) if key.startswith('pass@'))
    top = sorted(cs, key=lambda n: -cs[n][k])[:3]
    names = [n for n in cs if 'main job' in n] + [n for n in top if 'main job' not in n]
    return [{'claim': f"{n}: {cs[n]['problems_in_family']:,} problems in the family, up to {rec['n']} held-out{f'; among the 3 highest {k} of {len(cs)} candidates' if n in top else ''}. "
                      f"The untrained model's ({rec['dtype'].removeprefix('torch.')}) greedy accuracy; mean accuracy of {k[5:]} samples at T 1; {k}",
             'value': f"{cs[n]['greedy_accuracy']:.1%}; {cs[n]['sampled_accuracy']:.1%}; {cs[n][k]:.1%}"} for n in names]


if __name__ == '__main__': main()
