"""How varied are a policy's right answers on a task with one right answer (the reasoning job, issue 64 item 4)? Every
right reply ends in the same number, so distinct right answers count 1 by construction; the spread is in the working.
`measure` samples K replies to each of the first held-out problems from a finished run's final policy (at the job's
temperature, as its evaluation samples), grades them, and keeps per problem `tba_kit.metrics.right_diversity`: how many
are right, their distinct answers, distinct texts, distinct-2 and self-BLEU among the right ones. `analyse` compares
systems at equal accuracy: per problem and seed, a system against the reference where both got the same number of
right samples (2 or more: the measures of texts depend on how many there are), the mean difference with a bootstrap
interval over those pairs.

peer_trl.py measures its finished runs with `--working K` (before their weights are deleted); alone, on a kept run:

    python benchmarks/working.py RUN_FOLDER [--config configs/reasoning.yaml] [--seed 0] [--samples 8] [--prompts 100]
"""
import argparse, json, sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import drop_weights, final_weights  # noqa: E402
from tba_kit.metrics import bootstrap_ci  # noqa: E402

MEASURES = ('texts', 'distinct_2', 'self_bleu')  # among a problem's right samples


def measure(run:Path, config:str, seed:int, extra:list, samples:int=8, prompts:int=100, drop:bool=True) -> dict:
    "Sample the final policy of `run` on the first `prompts` held-out problems; run/working.json keeps the texts, the result each problem's measures"
    import torch
    from safetensors.torch import load_model
    from tba_kit.build import make_policy
    from tba_kit.evaluation import evaluate
    from tba_kit.metrics import right_diversity
    from tba_kit.tasks import last_number, make_task
    if samples < 2: raise ValueError(f"samples must be >= 2 to compare a problem's right answers, got {samples}")
    cfg, weights = final_weights(run, config, seed, extra)
    torch.manual_seed(seed); torch.set_num_threads(cfg.trainer_threads)
    policy, tok = make_policy(cfg)
    load_model(policy, str(weights))
    task = make_task(cfg.task, **cfg.task_args)
    res = evaluate(policy, tok, task, 'test', cfg.eval_max_new_tokens, cfg.eval_batch_size, prompts, temperature=cfg.logprob_temp,
                   samples=samples, keep_samples=True)
    per = [right_diversity(r['samples'], r['samples_correct'], last_number) for r in res['examples']]
    (run / 'working.json').write_text(json.dumps({'samples': samples, 'temperature': cfg.logprob_temp, 'examples': res['examples'], 'measures': per}))
    if drop: drop_weights(run)
    return {'samples': samples, 'problems': [r['prompt'] for r in res['examples']], 'measures': per}


def _mean(xs) -> float: return float(np.mean(xs)) if len(xs) else float('nan')


def summary(w:dict) -> dict:
    "One run: sampled accuracy over its problems; per measure, the mean over problems with 2 or more right samples"
    m, k = w['measures'], w['samples']
    two = [x for x in m if x['right'] >= 2]
    return {'accuracy': _mean([x['right'] / k for x in m]), 'problems_2_right': len(two), 'answers': _mean([x['answers'] for x in two]),
            **{f: _mean([x[f] for x in two]) for f in MEASURES}}


def paired(a:list, b:list) -> dict:
    "Runs of two systems paired by seed: per measure, the mean of a - b over the problems both got equally often right (>= 2), with its interval"
    out = {}
    for f in MEASURES:
        d = [x[f] - y[f] for wa, wb in zip(a, b) for x, y in zip(wa['measures'], wb['measures']) if x['right'] == y['right'] >= 2]
        out[f] = {'mean': _mean(d), 'ci': list(bootstrap_ci(d)) if d else None, 'pairs': len(d)}
    return out


def analyse(runs:dict, reference:str|None=None) -> dict:
    "runs: system -> each seed's `measure` result; per system the median over seeds of each summary, and each system against `reference`"
    first = next(iter(runs.values()))[0]
    for s, ws in runs.items():
        if any(w['problems'] != first['problems'] or w['samples'] != first['samples'] for w in ws):
            raise ValueError(f"{s}: runs measured on other problems or samples than the others; measure all with the same --working and --working_prompts")
    each = {s: [summary(w) for w in ws] for s, ws in runs.items()}
    res = {'systems': {s: {k: float(np.median([x[k] for x in xs])) for k in xs[0]} for s, xs in each.items()}}
    if reference in runs:
        res['reference'] = reference
        res['against_reference'] = {s: paired(ws, runs[reference]) for s, ws in runs.items() if s != reference}
    return res


def report(res:dict):
    print("\nRight answers' spread (sampled from the final policies; per problem with >= 2 right samples; median over seeds):\n\n"
          "| system | sampled accuracy | problems with >= 2 right | distinct answers | distinct texts | distinct-2 | self-BLEU |\n|---|---|---|---|---|---|---|")
    for s, r in res['systems'].items():
        print(f"| {s} | {r['accuracy']:.1%} | {r['problems_2_right']:.0f} | {r['answers']:.2f} | {r['texts']:.2f} | {r['distinct_2']:.3f} | {r['self_bleu']:.3f} |")
    for s, p in res.get('against_reference', {}).items():
        print(f"{s} - {res['reference']} at equal right samples: " + '; '.join(
            f"{f} {v['mean']:+.3f} [{v['ci'][0]:+.3f}, {v['ci'][1]:+.3f}] over {v['pairs']} problems" if v['ci'] else f"{f}: no problem right equally often"
            for f, v in p.items()))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('run', help='a finished run folder with its final checkpoint (or TRL\'s policy.safetensors)')
    ap.add_argument('--config', default='configs/reasoning.yaml', help="the job (TRL's runs: their config is this with the overrides after --)")
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--samples', type=int, default=8)
    ap.add_argument('--prompts', type=int, default=100)
    argv, extra = (argv[:argv.index('--')], argv[argv.index('--') + 1:]) if '--' in argv else (argv, [])
    a = ap.parse_args(argv)
    w = measure(Path(a.run), a.config, a.seed, extra, a.samples, a.prompts, drop=False)
    report(analyse({Path(a.run).name: [w]}))


if __name__ == '__main__': main(sys.argv[1:])
