"""TB's diversity on a real model: TB, VarGrad, tba_kit's GRPO and TRL's GRPOTrainer train on the multiples task
(configs/multiples.yaml: "Name an even number between 23 and 41.", several right answers a prompt) with the same model,
settings and minutes of training, one run at a time. Each final policy's distribution over every held-out prompt's
right answers is then computed exactly (tba_kit.answers: every answer scored, no sampling noise) beside the
objective's target pi_ref(y) exp(r(y)/beta) under the untrained model:

- accuracy: the policy's probability of a right answer (what sampled accuracy estimates);
- distinct right answers among 64 samples (expected);
- entropy of the policy over the right answers, given that it answers right;
- total-variation distance to the target, and between the two given a right answer (the spread without accuracy).

Per system: the median over seeds with a bootstrap interval over seeds and prompts, and each seed's numbers. Goal
(issue 23): at accuracy within 5 points of GRPO's, TB / VarGrad keep >= 2x GRPO's distinct right answers and land
within TV <= 0.15 of the target. Each system is also paired with GRPO by seed and prompt (GRPO's runs of this call, or
of the results file `--baseline` names, for a lever measured apart: any config field as a flag, runs in runs/NAME):
its accuracy minus GRPO's and its distinct right answers minus twice GRPO's, medians over seeds with intervals.

    python benchmarks/diversity.py --seeds 0 1 2 [--systems tb vargrad grpo trl] [--name diversity]
    python benchmarks/diversity.py --seeds 0 1 2 --report     # analyse finished runs only (--resume: run the rest)
    python benchmarks/diversity.py --seeds 0 1 2 --systems vargrad --name replay --p_recent=0.5 --baseline benchmarks/results/diversity.json
    python benchmarks/diversity.py --smoke                     # CI: the tiny model, tb and grpo, two steps

TRL (pip install trl) runs through benchmarks/peer_trl.py with its own defaults where the job fixes nothing (loss
'dapo', beta 0). A run's checkpoint is deleted once measured; its metrics, evaluations and answers.json (per prompt:
the right answers, the policy's and the target's probabilities; `tba_kit.viz.answers` draws it) stay.
"""
import argparse, json, sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import config_of, drop_weights, final_weights, interval, provenance, same_job, timed_run  # noqa: E402
from tba_kit.metrics import bootstrap_ci  # noqa: E402

# tb_z17: TB with log Z starting near the target's, log sum_y pi_ref(y) e^{r/beta} = 1/beta + log P_ref(right) ~ 20 - 3
# (the untrained model is right 3.5-16% of the time): from 0, at log_z_lr 0.1 a step, log Z needs ~170 steps to get there.
# Measured (seed 0): worse, not better. Every sampled wrong answer then has a residual near +17 and is pushed down hard,
# the mass goes to replies without a number, and accuracy falls to 0 (VarGrad's batch estimate of log Z avoids both).
SYSTEMS = {'tb': ['--objective=tb'], 'vargrad': ['--objective=vargrad'], 'grpo': ['--objective=grpo'], 'trl': None,
           'tb_z17': ['--objective=tb', '--objective_args={log_z_init: 17.0}']}


def command(system:str, seed:int, out:Path, config:str, extra:list) -> list:
    "The command line of one run (TRL's through peer_trl.py, which keeps its final policy)"
    if system == 'trl':
        return [sys.executable, str(ROOT / 'benchmarks' / 'peer_trl.py'), '--one', '--keep_policy', '--config', config, '--seed', str(seed), '--out', str(out), '--', *extra]
    return [sys.executable, '-m', 'tba_kit.cli', 'train', config, f'--seed={seed}', f'--out_dir={out}', '--no-progress', *SYSTEMS[system], *extra]


def audit(systems:list, config:str, extra:list) -> dict:
    "Refuse systems that would differ in more than their objective (`same_job`): one model, prompts, reward and evaluation"
    return same_job({s: config_of(command(s, 0, ROOT / 'runs' / 'audit', config, extra)) for s in systems}, {'objective', 'objective_args'})


def train(system:str, seed:int, out:Path, config:str, extra:list, resume:bool) -> float:
    "One run in its own process; wall seconds"
    return timed_run(command(system, seed, out, config, extra), out, resume)


def measure(run:Path, config:str, seed:int, extra:list, drop:bool=True) -> dict:
    "The final policy of `run` against the target, written to run/answers.json (`drop`: its weights are deleted after)"
    import torch
    from safetensors.torch import load_model
    from tba_kit.answers import answer_distributions
    from tba_kit.build import make_policy
    from tba_kit.tasks import make_task
    cfg, weights = final_weights(run, config, seed, extra)
    torch.set_num_threads(cfg.trainer_threads)
    (policy, tok), (ref, _) = make_policy(cfg), make_policy(cfg)  # ref: the untrained model, the objective's reference
    load_model(policy, str(weights))
    task = make_task(cfg.task, **cfg.task_args)
    rep = answer_distributions(policy, ref, tok, task, task.prompts('test'), beta=cfg.beta, temperature=cfg.logprob_temp)  # the policy the objective trains
    res = {'beta': cfg.beta, 'summary': rep.summary(),
           'rows': [{'prompt': r.prompt_id, 'question': p.text(), 'answers': r.answers, 'policy': r.policy.tolist(), 'target': r.target.tolist()}
                    for r, p in zip(rep.rows, task.prompts('test'))]}
    (run / 'answers.json').write_text(json.dumps(res))
    if drop: drop_weights(run)
    return res


def per_prompt(res:dict) -> dict:
    "Each measure per prompt, from answers.json"
    from tba_kit.answers import DiversityReport
    return DiversityReport.from_rows(res['rows']).columns()


def compact(res:dict) -> dict:
    "answers.json with probabilities to 6 decimals (TV moves by < 1e-5): each run's distributions in the results file"
    return {'beta': res['beta'], 'rows': [r | {k: [round(p, 6) for p in r[k]] for k in ('policy', 'target')} for r in res['rows']]}


def analyse(runs:dict) -> dict:
    "runs: system -> [(seed, answers.json dict)]: per measure the median over seeds, its interval over seeds and prompts, each seed's mean"
    out = {}
    for system, rs in runs.items():
        cols = [per_prompt(r) for _, r in rs]
        out[system] = {'seeds': [s for s, _ in rs]} | {
            m: {'median': float(np.median([np.mean(c[m]) for c in cols])), 'ci': [float(x) for x in bootstrap_ci(np.array([c[m] for c in cols]), stat=np.median)],
                'per_seed': [round(float(np.mean(c[m])), 4) for c in cols]} for m in cols[0]}
    if 'grpo' in out:
        for s in ('tb', 'vargrad'):
            if s in out: out[s]['distinct_vs_grpo'] = out[s]['distinct_correct_64']['median'] / max(out['grpo']['distinct_correct_64']['median'], 1e-12)
    return out


def paired(runs:dict, base:list) -> dict:
    """Each system against GRPO's runs `base` ([(seed, answers.json)]) on the seeds both have, paired by seed and prompt:
    its accuracy minus GRPO's, and its distinct right answers minus twice GRPO's (the goal holds where that is >= 0);
    medians over seeds with intervals over seeds and prompts"""
    grpo = {seed: (r, per_prompt(r)) for seed, r in base}
    out = {}
    for system, rs in runs.items():
        if system == 'grpo': continue
        if missing := [seed for seed, _ in rs if seed not in grpo]: print(f"{system}: no GRPO run of seed {' '.join(map(str, missing))} to pair with; paired on the others")
        rs = [(seed, r) for seed, r in rs if seed in grpo]
        for seed, r in rs:
            g = grpo[seed][0]['rows']
            if [x['prompt'] for x in r['rows']] != [x['prompt'] for x in g]: raise ValueError(f"{system} seed {seed} and GRPO's were measured on different prompts")
            if any(x['answers'] != y['answers'] or not np.allclose(x['target'], y['target'], atol=1e-5) for x, y in zip(r['rows'], g)):
                raise ValueError(f"{system} seed {seed} and GRPO's have different targets (another model, beta or task): they do not compare")
        if not rs: continue
        cols = [(per_prompt(r), grpo[seed][1]) for seed, r in rs]
        gaps = {'accuracy_gap': np.array([np.subtract(c['accuracy'], g['accuracy']) for c, g in cols]),
                'distinct_minus_2x_grpo': np.array([np.subtract(c['distinct_correct_64'], np.multiply(2, g['distinct_correct_64'])) for c, g in cols])}
        out[system] = {'seeds': [seed for seed, _ in rs]} | {m: {'median': float(np.median(x.mean(1))), 'ci': [float(v) for v in bootstrap_ci(x, stat=np.median)]}
                                                           for m, x in gaps.items()}
    return out


def target_measures(res:dict) -> dict:
    "The measures of the target itself (the same for every run: one reference, one set of prompts), means over prompts"
    return {m: float(np.mean(v)) for m, v in per_prompt(res | {'rows': [r | {'policy': r['target']} for r in res['rows']]}).items()}


def report(res:dict):
    print("\n| system | seeds | accuracy (P right) | distinct right of 64 | entropy over right (nats) | TV to target | TV given right |")
    print("|---|---|---|---|---|---|---|")
    for s, r in res.items():
        cell = lambda m, f: f"{r[m]['median']:{f}} [{r[m]['ci'][0]:{f}}, {r[m]['ci'][1]:{f}}]"
        print(f"| {s} | {len(r['seeds'])} | {cell('accuracy', '.1%')} | {cell('distinct_correct_64', '.2f')} | {cell('entropy_correct', '.2f')} | {cell('tv_to_target', '.3f')} | {cell('tv_given_right', '.3f')} |")
    for s in ('tb', 'vargrad'):
        if 'distinct_vs_grpo' in res.get(s, {}): print(f"{s}: {res[s]['distinct_vs_grpo']:.2f}x GRPO's distinct right answers (goal >= 2), "
                                                       f"accuracy {100 * (res[s]['accuracy']['median'] - res['grpo']['accuracy']['median']):+.1f} points from GRPO's")


def report_paired(cmp:dict):
    "The paired gaps, and whether each half of the goal is shown beyond the noise"
    for s, r in cmp.items():
        (acc, alo, ahi), (d, lo, hi) = [(r[m]['median'], *r[m]['ci']) for m in ('accuracy_gap', 'distinct_minus_2x_grpo')]
        near_shown, twice_shown = alo >= -0.05, lo >= 0
        near = 'within 5 points' if near_shown else 'more than 5 points below' if ahi < -0.05 else 'within the noise of 5 points'
        twice = '2x shown' if twice_shown else 'below 2x' if hi < 0 else 'within the noise of 2x'
        print(f"{s} against GRPO, paired by seed (seeds {' '.join(map(str, r['seeds']))}) and prompt: accuracy {100 * acc:+.1f} points "
              f"[{100 * alo:+.1f}, {100 * ahi:+.1f}] ({near}); distinct right answers minus 2x GRPO's {d:+.2f} [{lo:+.2f}, {hi:+.2f}] ({twice}): "
              f"the goal's accuracy and 2x conditions {'both shown' if near_shown and twice_shown else 'not both shown'}")


def baseline_grpo(path:str) -> tuple:
    "GRPO's measured runs [(seed, answers)] in a results file this script wrote (a path from here or from the repository), and its name in the repository"
    f = next((p.resolve() for p in (Path(path), ROOT / path) if p.is_file()), None)
    if f is None: sys.exit(f"--baseline {path}: no such file (a results file of this script, e.g. benchmarks/results/diversity.json)")
    got = json.loads(f.read_text()).get('answers', {}).get('grpo')
    if not got: sys.exit(f"--baseline {path}: no GRPO runs in it (a results file of this script with grpo among its systems)")
    return (str(f.relative_to(ROOT)) if f.is_relative_to(ROOT) else str(f)), [(int(seed), r) for seed, r in got.items()]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--config', default='configs/multiples.yaml')
    ap.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    ap.add_argument('--systems', nargs='+', default=['tb', 'vargrad', 'grpo', 'trl'], choices=list(SYSTEMS))  # tb_z17: a lever that failed, on request
    ap.add_argument('--out_root', default=None, help='where the runs go (default: runs/NAME, runs/diversity_smoke)')
    ap.add_argument('--name', default='diversity')
    ap.add_argument('--resume', action='store_true', help='keep runs already measured in out_root')
    ap.add_argument('--report', action='store_true', help='run nothing: analyse the measured runs in out_root')
    ap.add_argument('--baseline', default=None, help="a results file whose GRPO runs the systems are paired with (default: this call's grpo runs)")
    ap.add_argument('--smoke', action='store_true', help='CI: the tiny model, tb and grpo, one seed, two steps, four held-out prompts')
    a, extra = ap.parse_known_args(argv)
    if a.smoke:
        a.seeds, a.systems, a.name = [0], ['tb', 'grpo'], None
        extra += ['--model=tiny', '--precision=fp32', '--mode=sync', '--searcher_threads=1', '--steps=2', '--time_limit=null', '--eval_every=0',
                  '--eval_samples=0', '--checkpoint_every=0', '--prefill=8', '--task_args={divisors: [1, 2], n_test: 4}']
    if a.baseline and 'grpo' in a.systems: sys.exit("--baseline pairs the systems with the GRPO runs of another call: leave grpo out of --systems, or drop --baseline")
    baseline, base = baseline_grpo(a.baseline) if a.baseline else (None, None)  # refused before any run starts
    audit(a.systems, a.config, extra)  # the systems see one job
    out_root = ROOT / (a.out_root or ('runs/diversity_smoke' if a.smoke else f'runs/{a.name}'))  # one folder per measurement
    runs = {s: [] for s in a.systems}
    for seed in a.seeds:
        for system in a.systems:
            out = out_root / f'{system}_seed{seed}'
            if (a.resume or a.report) and (out / 'answers.json').exists(): res = json.loads((out / 'answers.json').read_text())
            elif a.report: continue
            else:
                wall = train(system, seed, out, a.config, extra, False)
                res = measure(out, a.config, seed, extra)
                print(f"{system} seed {seed} ({wall / 60:.1f} min): " + ', '.join(f"{m} {v['mean']:.3f}" for m, v in res['summary'].items()), flush=True)
            runs[system].append((seed, res))
    runs = {s: r for s, r in runs.items() if r}
    if not runs: sys.exit(f"no measured run in {out_root}")
    res, target = analyse(runs), target_measures(next(iter(runs.values()))[0][1])
    report(res)
    base = base or runs.get('grpo')
    cmp = paired(runs, base) if base else {}
    report_paired(cmp)
    print("target: " + ', '.join(f"{m} {v:.3f}" for m, v in target.items()))
    if a.name:
        dists = {s: {str(seed): compact(r) for seed, r in rs} for s, rs in runs.items()}  # what tutorials/diversity draws
        (ROOT / 'benchmarks' / 'results' / f'{a.name}.json').write_text(json.dumps({**provenance(), 'config': a.config, 'overrides': extra, 'results': res, 'vs_grpo': cmp, 'baseline': baseline, 'target': target, 'answers': dists}))
    return res


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): per system its accuracy, distinct right answers and distance to the target; the gaps paired with GRPO"
    iv = lambda r, fmt: interval({'median': r['median'], 'lo': r['ci'][0], 'hi': r['ci'][1]}, fmt)
    out = [{'claim': f"{s} ({len(r['seeds'])} seed{'s' * (len(r['seeds']) > 1)}): P(right answer); expected distinct right answers of 64 samples; TV distance to the target",
            'value': f"{iv(r['accuracy'], '{:.1%}')}; {iv(r['distinct_correct_64'], '{:.2f}')}; {iv(r['tv_to_target'], '{:.3f}')}"} for s, r in rec['results'].items()]
    base = f"GRPO's runs of {Path(rec['baseline']).name}" if rec.get('baseline') else "GRPO's runs of the same call"
    for s, r in (rec.get('vs_grpo') or {}).items():
        gap = r['accuracy_gap']
        out += [{'claim': f"{s} minus GRPO, paired by seed and prompt ({base}): P(right answer), points (goal: above -5)", 'value': iv({'median': 100 * gap['median'], 'ci': [100 * x for x in gap['ci']]}, '{:+.1f}')},
                {'claim': f"{s}: distinct right answers of 64 minus twice GRPO's, paired by seed and prompt ({base}; goal: at least 0)", 'value': iv(r['distinct_minus_2x_grpo'], '{:+.2f}')}]
    if t := rec.get('target'):
        out.append({'claim': 'the target pi_ref(y) exp(r(y)/beta) itself: expected distinct right answers of 64 samples; entropy over the right answers (nats)',
                    'value': f"{t['distinct_correct_64']:.2f}; {t['entropy_correct']:.2f}"})
    return out


if __name__ == '__main__': main(sys.argv[1:])
