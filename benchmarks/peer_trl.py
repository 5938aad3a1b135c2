"""tba_kit's main job beside TRL's GRPOTrainer on exactly the same job: model, prompt token ids, reward, K completions
per prompt, prompts per step, completion length, sampling temperature, held-out greedy evaluation (tba_kit's
`evaluate`, the same problems), and the same budget of training minutes (evaluations excluded). Each run is its own
process, one at a time, seeds interleaved.

    python benchmarks/peer_trl.py --seeds 0 1 2 3 4 [--systems trl async sync 'fast=sync --lr=3e-5'] [--name peer_trl]
    python benchmarks/peer_trl.py --tune --seeds 100 101 [--kinds trl async sync] [--lrs 1e-5 3e-5 1e-4] [--name peer_tune]
    python benchmarks/peer_trl.py --seeds 0 1 2 3 4 --report   # analyse the kept records only (--resume: run the rest)
    python benchmarks/peer_trl.py --config configs/reasoning.yaml --seeds 0 1 2 3 4 --reference best_on_policy --working 8 --working_systems tba dapo ...
    python benchmarks/peer_trl.py --smoke [--config configs/reasoning.yaml]  # CI: two TRL steps on the tiny model, evaluated, in seconds

The harness is checked, not assumed. TRL gets each prompt as the text tba_kit's searchers generate from
(`render_prompts`: the chat template continuing the reply's prefix "The answer is"; given the chat, TRL would open a
new assistant turn after it), and `check_same_prompts` refuses to train unless the ids TRL's trainer builds equal
`encode_prompts`' for 64 training rows. Every system of a comparison sees one job (`audit`: the configs differ only in
the system's own settings, never in model, task, completion length or evaluation), every run is evaluated on the same
problems (`same_evaluation`), and a run whose training reward rose by 0.3 or more while its held-out accuracy stayed
inside its start's interval is reported as a harness failure, not as a result (`harness_check`).

TRL (pip install trl) runs with its own defaults where the job does not fix a setting: loss_type 'dapo' ('trl_grpo':
'grpo'), beta 0 (no KL), scale_rewards 'group', one generation per step; the job's learning-rate schedule (for the
main job's schedule over minutes, the same rate at the same training second); in fp32 on a CPU as tba_kit's CPU
trainer (TRL's default is bf16 autocast: `--trl_bf16`). `--tune` runs every kind at every learning rate and schedule
on two tuning seeds, evaluated on `--validation` training problems held out from training (never the test split), and
names each kind's best. Each run leaves a compact record in benchmarks/results/<name>_runs/ (per-problem correctness at
every evaluation, the training reward, the command, commit and machine), so the analysis reruns from a clean clone:
median final accuracy over seeds with a bootstrap interval over seeds and problems, accuracy at equal steps, seconds per
step, the time each system needs to reach TRL's median final accuracy; the figure (accuracy against training minutes)
goes to benchmarks/results/<name>.svg. `--working K` samples K replies per held-out problem from the named systems'
final policies before their weights are deleted and compares how varied their right replies are, against the reference
at equal accuracy (benchmarks/working.py; the per-problem measures go into the records).
"""
import argparse, json, os, sys, time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
import working  # noqa: E402
from evidence import (config_of, curve_svg, evaluations, final_with_interval, harness_check, keep_record, median, provenance, rel, rows, system_claims,  # noqa: E402
                      same_evaluation, same_job, seeds_interval, time_to, timed_run)

DEFAULT_CONFIG = 'configs/quickstart.yaml'  # the main job


def clock_schedule(cfg):
    "For lr_schedule_by: time, the rate at (training seconds, updates done) as tba_kit's Trainer.follow sets it; else None"
    if cfg.lr_schedule_by != 'time': return None
    import torch
    from tba_kit.trainer import clock_step, lr_scheduler
    fn = lr_scheduler(torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=cfg.lr), cfg.lr_schedule, cfg.warmup_steps, cfg.steps,
                      cfg.decay_steps, cfg.stable_steps).lr_lambdas[0]
    return lambda seconds, updates: cfg.lr * fn(clock_step(seconds / (60 * cfg.time_limit), updates, cfg.steps))


def trl_data(task, tok) -> list:
    "The training rows TRL gets: each prompt as the text tba_kit's searchers generate from (`render_prompts`), and its columns"
    from tba_kit.tasks import render_prompts
    ps = task.prompts('train')
    return [{'prompt': t, **p.fields} for p, t in zip(ps, render_prompts(tok, [p.messages for p in ps]))]


def check_same_prompts(trainer, task, tok, n:int=64, seed:int=0) -> int:
    """Refuse to train unless, for `n` training rows drawn at random, the prompt ids TRL's trainer builds from its dataset
    equal those tba_kit's searchers generate from (`encode_prompts` of the task's prompt); their number. TRL renders a
    chat prompt with a new assistant turn after it, where tba_kit continues the reply's prefix: a peer given chats learns
    a format the evaluation never shows it."""
    import random
    from tba_kit.tasks import encode_prompts
    ps, data = task.prompts('train'), trainer.train_dataset
    if len(data) != len(ps): raise SystemExit(f"harness: TRL's dataset has {len(data)} rows, the task {len(ps)} training prompts")
    idx = random.Random(seed).sample(range(len(ps)), min(n, len(ps)))
    got = [list(map(int, x)) for x in trainer._tokenize_prompts([data[i]['prompt'] for i in idx])[0]]
    want = encode_prompts(tok, [ps[i].messages for i in idx])
    bad = [j for j, (a, b) in enumerate(zip(got, want)) if a != list(b)]
    if bad: raise SystemExit(f"harness: TRL would generate from other tokens than tba_kit's searchers for {len(bad)} of {len(idx)} prompts, "
                             f"e.g. TRL {tok.decode(got[bad[0]])!r} against tba_kit {tok.decode(want[bad[0]])!r}")
    return len(idx)


def trl_trainer(cfg, task, model, tok, out:Path, callbacks:list=(), bf16:bool=False, **args):
    """TRL's GRPOTrainer on `cfg`'s job: the task's training rows as `trl_data` gives them, its reward, K completions per
    prompt, prompts per step, lr, completion length, sampling settings of `cfg`; TRL's own defaults otherwise (`args`: more GRPOConfig fields)"""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    def reward(prompts, completions, completion_ids=None, **columns): return task.reward(prompts, completions, completion_ids, **columns)
    reward.__name__ = task.name
    config = GRPOConfig(**dict(output_dir=str(out), num_generations=cfg.k, per_device_train_batch_size=cfg.k * cfg.prompts_per_step,
                               gradient_accumulation_steps=1, learning_rate=cfg.lr, lr_scheduler_type=cfg.lr_schedule, warmup_steps=cfg.warmup_steps,
                               max_completion_length=cfg.max_new_tokens, weight_decay=cfg.weight_decay, temperature=cfg.temperature,
                               top_p=cfg.top_p, max_grad_norm=cfg.max_grad_norm or 0., max_steps=cfg.steps, use_cpu=cfg.device == 'cpu', bf16=bf16,
                               seed=cfg.seed, logging_steps=1, save_strategy='no', report_to='none', disable_tqdm=True, dataloader_num_workers=0) | args)
    return GRPOTrainer(model=model, reward_funcs=reward, args=config, train_dataset=Dataset.from_list(trl_data(task, tok)), processing_class=tok,
                       callbacks=list(callbacks))


def trl_run(cfg, out:Path, bf16:bool=False, eval_minutes:float|None=None, keep_policy:bool=False, loss_type:str|None=None):
    """TRL's GRPOTrainer on `cfg`'s job for cfg.time_limit minutes of training; evaluations as tba_kit's (every cfg.eval_every
    steps and every `eval_minutes` of training), into `out`; the training reward as tba_kit logs it ('reward/mean');
    `keep_policy`: its final weights too. `loss_type`: TRL's (None: its default, 'dapo')."""
    if cfg.temperature_final is not None:
        raise ValueError(f"temperature_final={cfg.temperature_final}: TRL's GRPOTrainer samples at one temperature; drop the anneal for its runs")
    import torch
    from transformers import TrainerCallback
    from tba_kit.build import make_policy
    from tba_kit.evaluation import evaluate
    from tba_kit.tasks import ValidationSplit, make_task
    torch.manual_seed(cfg.seed); torch.set_num_threads(os.cpu_count() or 1)
    t0 = time.perf_counter()
    task, (model, tok) = make_task(cfg.task, **cfg.task_args), make_policy(cfg)
    task = ValidationSplit(task, cfg.validation) if cfg.validation else task  # tuning: as tba_kit's loop
    out.mkdir(parents=True, exist_ok=True); (out / 'evals').mkdir(exist_ok=True)
    log, clock = open(out / 'metrics.jsonl', 'w'), {'eval': 0.}
    def evaluate_now(step, sampled=False):
        "Greedy held-out accuracy; sampled accuracy too before and after training, as tba_kit's loop"
        t = time.perf_counter()
        res = evaluate(model, tok, task, 'test', cfg.eval_max_new_tokens, cfg.eval_batch_size, cfg.eval_limit, temperature=cfg.logprob_temp,
                       samples=cfg.eval_samples if sampled else 0)
        (out / 'evals' / f'step_{step:06d}.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in res.pop('examples')))
        clock['eval'] += time.perf_counter() - t
        wall = time.perf_counter() - t0
        log.write(json.dumps({'step': step, 'time/seconds': wall, 'time/train_seconds': wall - clock['eval'] - clock['load'], **res}) + '\n'); log.flush()
        print(f"trl step {step}: accuracy {res['eval/accuracy']:.1%} after {(wall - clock['eval'] - clock['load']) / 60:.1f} training min", flush=True)
    follow = clock_schedule(cfg)
    class Budget(TrainerCallback):
        "Stop after cfg.time_limit minutes of training; evaluate as tba_kit's loop does; log the step and its reward; the lr over the minutes as tba_kit's (lr_schedule_by: time)"
        def __init__(self): self.next, self.t_step, self.lr, self.row = eval_minutes * 60 if eval_minutes else None, None, None, {}
        def on_step_begin(self, args, state, control, optimizer=None, **kw):
            self.t_step = time.perf_counter()
            if follow is not None:  # before this update: TRL's own (constant) scheduler resets the rate after it
                self.lr = follow(self.t_step - t0 - clock['eval'] - clock['load'], state.global_step)
                for g in optimizer.param_groups: g['lr'] = self.lr
        def on_step_end(self, args, state, control, **kw):
            train = time.perf_counter() - t0 - clock['eval'] - clock['load']
            self.row = {'step': state.global_step, 'train/step': state.global_step, 'time/seconds': time.perf_counter() - t0,
                        'time/train_seconds': train, 'train/step_seconds': time.perf_counter() - self.t_step} | ({'train/lr': self.lr} if self.lr is not None else {})
            if train >= 60 * cfg.time_limit or state.global_step >= cfg.steps: control.should_training_stop = True  # evaluated after
        def on_log(self, args, state, control, logs=None, **kw):  # after on_step_end (logging_steps=1): the step's row with its reward
            if not self.row: return
            log.write(json.dumps(self.row | {'reward/mean': logs['reward']} if 'reward' in (logs or {}) else self.row) + '\n'); log.flush()
            self.row, train, step = {}, self.row['time/train_seconds'], self.row['step']
            if control.should_training_stop: return
            if (cfg.eval_every and step % cfg.eval_every == 0) or (self.next is not None and train >= self.next):
                evaluate_now(step)
                while self.next is not None and train >= self.next: self.next += eval_minutes * 60
    trainer = trl_trainer(cfg, task, model, tok, out / 'trl', [Budget()], bf16=bf16, lr_scheduler_type='constant' if follow else cfg.lr_schedule,
                          **({'loss_type': loss_type} if loss_type else {}))
    checked = check_same_prompts(trainer, task, tok)
    clock['load'] = time.perf_counter() - t0
    evaluate_now(0, sampled=True)
    trainer.train()
    evaluate_now(trainer.state.global_step, sampled=True)
    log.close()
    if keep_policy:  # benchmarks/diversity.py measures it
        from safetensors.torch import save_model
        save_model(model, str(out / 'policy.safetensors'))
    (out / 'summary.json').write_text(json.dumps({'steps': trainer.state.global_step, 'seconds': time.perf_counter() - t0, 'trl_bf16': bf16,
                                                  'loss_type': trainer.args.loss_type, 'prompts_checked_equal': checked}))


KINDS = ('trl', 'trl_grpo', 'async', 'sync')  # TRL with its default loss ('dapo') or 'grpo'; tba_kit's two modes


def parse_system(spec:str) -> tuple:
    "'async' or 'label=kind --key=value ...' (one argument, quoted): (label, kind, the kind's own overrides)"
    import shlex
    label, _, rest = spec.partition('=')
    kind, *over = shlex.split(rest) or [label]
    if kind not in KINDS: raise SystemExit(f"--systems {spec!r}: the kind must be one of {KINDS}, got {kind!r} ('label=kind --key=value ...')")
    return label, kind, over


def command(kind, seed, out:Path, config, extra, trl_bf16=False, keep_policy=False) -> list:
    "The command line of one run of `kind` (see KINDS), its own process (`keep_policy`: TRL saves its final weights; tba_kit always checkpoints)"
    if kind.startswith('trl'):
        loss = ['--trl_loss', 'grpo'] if kind == 'trl_grpo' else []
        return ([sys.executable, __file__, '--one', '--config', config, '--seed', str(seed), '--out', str(out), *loss] + (['--trl_bf16'] if trl_bf16 else [])
                + (['--keep_policy'] if keep_policy else []) + ['--', *extra])
    both = ['--searcher_threads=2'] if kind == 'sync' else []  # sync: generation has the machine to itself
    return [sys.executable, '-m', 'tba_kit.cli', 'train', config, f'--mode={kind}', f'--seed={seed}', f'--out_dir={out}', '--no-progress', *both, *extra]


def audit(systems:list, config, extra, seed:int=0) -> dict:
    """Refuse systems whose runs would differ in more than their kind and their own overrides (`same_job`): every system
    sees the same model, prompts, reward and evaluation; the fields in which each differs from the first"""
    arms = {label: config_of(command(kind, seed, ROOT / 'runs' / 'audit', config, [*extra, *over])) for label, kind, over in systems}
    return same_job(arms, {'mode', 'searcher_threads'} | {o[2:].split('=')[0] for _, _, over in systems for o in over})


def accuracy_at_steps(runs:dict) -> dict:
    "Per step evaluated by every run of every system: per system the median accuracy over seeds with its interval over seeds and problems"
    evs = {s: [{e['step']: e for e in evaluations(f)} for f in fs] for s, fs in runs.items()}
    common = sorted(set.intersection(*(set(e) for es in evs.values() for e in es)))
    return {step: {s: seeds_interval(np.array([e[step]['correct'] for e in es], float)) for s, es in evs.items()} for step in common}


def pick_reference(finals:dict, reference:str|None, on_policy:set) -> str|None:
    """The system the others are timed against: `reference` by label; 'best_on_policy': of the on-policy systems (`on_policy`
    labels), the one with the highest median final; None: the TRL system, if one ran"""
    if reference == 'best_on_policy':
        cands = {s: f for s, f in finals.items() if s in on_policy}
        return max(cands, key=lambda s: cands[s]) if cands else None
    if reference is not None:
        if reference not in finals: raise ValueError(f"--reference {reference!r} is not among the systems with results: {sorted(finals)}")
        return reference
    return next((s for s in finals if s.startswith('trl')), None)


def analyse(runs:dict, walls:dict, figure:Path, reference:str|None=None, on_policy:set=frozenset()) -> dict:
    """Per system: median final accuracy with its interval, steps and seconds per step, accuracy at the steps all evaluated;
    the time to the reference system's median final accuracy (`pick_reference`). A system with a harness failure
    (`harness_check`) is reported as that, not as a result."""
    same_evaluation([f for fs in runs.values() for f in fs])
    checks = {s: [harness_check(f) for f in fs] for s, fs in runs.items()}
    failed = {s for s, a in checks.items() if any(x['failure'] for x in a)}
    res = {'harness_failures': sorted(failed), 'audit': checks, 'systems': {}}
    runs = {s: fs for s, fs in runs.items() if s not in failed}
    for system, folders in runs.items():
        steps = [max(r['step'] for r in rows(f)) for f in folders]
        res['systems'][system] = {'final': final_with_interval(folders), 'initial': float(np.mean(evaluations(folders[0])[0]['correct'])),
                       'steps': steps,
                       'seconds_per_step': float(np.median([evaluations(f)[-1]['train'] / n for f, n in zip(folders, steps)])),  # generation included
                       'wall_minutes': [w / 60 for w in walls[system]],
                       'training_minutes': [evaluations(f)[-1]['train'] / 60 for f in folders]}
    ref = pick_reference({s: r['final']['median'] for s, r in res['systems'].items()}, reference, on_policy)
    if ref is not None:
        target, ref_min = res['systems'][ref]['final']['median'], median(res['systems'][ref]['training_minutes'])
        res['reference'] = ref
        for system in runs:
            t = [time_to(f, target) for f in runs[system]]
            res['systems'][system]['minutes_to_reference_median'] = [None if x is None else x / 60 for x in t]
            reached = [x / 60 for x in t if x is not None]
            res['systems'][system]['ratio_to_reference_time'] = (median(reached) / ref_min) if len(reached) > len(t) / 2 else None  # the median seed must reach it
    measured = {s: [json.loads(Path(f).read_text()).get('working') if Path(f).is_file() else None for f in fs] for s, fs in runs.items()}  # records keep them
    measured = {s: ws for s, ws in measured.items() if ws and all(ws)}
    if measured: res['working'] = working.analyse(measured, ref)
    if runs:
        res['at_steps'] = accuracy_at_steps(runs)
        curve_svg(runs, figure)
    return res


def report(res:dict):
    for s in res['harness_failures']:
        bad = [a for a in res['audit'][s] if a['failure']]
        print(f"HARNESS FAILURE, not a result: {s}: training reward {bad[0]['reward_start']:.2f} -> {bad[0]['reward_end']:.2f} while held-out accuracy "
              f"{bad[0]['accuracy_start']:.1%} -> {bad[0]['accuracy_end']:.1%} stayed inside its start's interval ({len(bad)} of {len(res['audit'][s])} runs)")
    ref = res.get('reference')
    print("\n| system | seeds | held-out accuracy before | final (median, 95% interval) | per seed | steps | s / step | training min |"
          + (f" minutes to {ref}'s median |" if ref else ''))
    print("|---|---|---|---|---|---|---|---|" + ('---|' if ref else ''))
    for s, r in res['systems'].items():
        f = r['final']
        to = ', '.join('never' if x is None else f'{x:.1f}' for x in r.get('minutes_to_reference_median', []))
        print(f"| {s} | {len(f['per_seed'])} | {r['initial']:.1%} | {f['median']:.1%} [{f['lo']:.1%}, {f['hi']:.1%}] | "
              f"{', '.join(f'{x:.1%}' for x in f['per_seed'])} | {', '.join(map(str, r['steps']))} | {r['seconds_per_step']:.2f} | "
              f"{median(r['training_minutes']):.1f} |" + (f" {to} |" if ref else ''))
    for s, r in res['systems'].items():
        if s != ref and r.get('ratio_to_reference_time') is not None: print(f"{s}: reaches {ref}'s median final accuracy in {r['ratio_to_reference_time']:.2f}x its training time")
    if res.get('at_steps'):
        systems = list(res['systems'])
        print(f"\nAt equal steps (median over seeds [95% interval over seeds and problems]):\n\n| step | {' | '.join(systems)} |\n|---|{'---|' * len(systems)}")
        for step, per in res['at_steps'].items():
            print(f"| {step} | " + ' | '.join(f"{per[s]['median']:.1%} [{per[s]['lo']:.1%}, {per[s]['hi']:.1%}]" for s in systems) + ' |')
    if res.get('working'): working.report(res['working'])


def run_all(systems:list, seeds:list, a, extra:list, working_samples:int=0, working_prompts:int=100, working_systems:list|None=None) -> dict:
    """Each system and seed in its own process, one at a time, seeds interleaved; label -> the runs' records (kept in
    benchmarks/results/<name>_runs/). `working_samples`: the final policies of `working_systems` (None: all) measured by working.py"""
    records = Path(a.results) / f'{a.name}_runs'
    runs = {label: [] for label, _, _ in systems}
    for seed in seeds:
        for label, kind, over in systems:
            rec = records / f'{label}_seed{seed}.json'
            if not rec.exists() or not (a.resume or a.report):
                if a.report: continue
                out = ROOT / a.out_root / f'{label}_seed{seed}'
                measured = working_samples and label in (working_systems or [label])
                cmd = command(kind, seed, out, a.config, [*extra, *over], a.trl_bf16, keep_policy=measured)
                made = provenance([rel(c) if str(c).startswith('/') else str(c) for c in cmd[1:]])  # the code the run starts with
                wall = timed_run(cmd, out, drop_checkpoints=not measured)
                if measured: made['working'] = working.measure(out, a.config, seed, [*extra, *over], working_samples, working_prompts)  # then its weights go
                keep_record(out, rec, wall, **made)
            runs[label].append(rec)
            ev = evaluations(rec)
            print(f"{label} seed {seed}: {ev[0]['accuracy']:.1%} -> {ev[-1]['accuracy']:.1%} in {ev[-1]['step']} steps, "
                  f"{ev[-1]['train'] / 60:.1f} training min", flush=True)
    return {s: fs for s, fs in runs.items() if fs}


def choose(runs:dict, systems:list) -> dict:
    "Tuning: per kind, the candidate with the best median final (validation) accuracy over the tuning seeds (a tie: the first listed)"
    best = {}
    for label, kind, over in systems:
        if label not in runs: continue
        acc = float(np.median([evaluations(r)[-1]['accuracy'] for r in runs[label]]))
        if kind not in best or acc > best[kind]['accuracy'] + 1e-12: best[kind] = {'label': label, 'overrides': over, 'accuracy': acc, 'seeds': len(runs[label])}
    return best


def main():
    argv = sys.argv[1:]
    extra = argv[argv.index('--') + 1:] if '--' in argv else []
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--config', default=DEFAULT_CONFIG, help='the job (configs/reasoning.yaml: the second job)')
    ap.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2, 3, 4])
    ap.add_argument('--systems', nargs='+', default=['trl', 'async', 'sync'],
                    help="kinds (trl, trl_grpo, async, sync) or 'label=kind --key=value ...' (that system's own overrides, after the common ones)")
    ap.add_argument('--tune', action='store_true', help='tune: every kind in --kinds at every --lrs and --schedules, evaluated on --validation training problems')
    ap.add_argument('--kinds', nargs='+', default=['trl', 'async', 'sync'], choices=KINDS)
    ap.add_argument('--lrs', nargs='+', default=['1e-5', '3e-5', '1e-4'])
    ap.add_argument('--schedules', nargs='+', default=['decay', 'constant'], choices=['decay', 'constant'],
                    help="decay: the config's own schedule (the main job's warmup-stable-decay over its minutes); constant")
    ap.add_argument('--validation', type=int, default=500, help='--tune: training problems held out to score the settings on (never the test split)')
    ap.add_argument('--name', default='peer_trl')
    ap.add_argument('--results', default=str(ROOT / 'benchmarks' / 'results'), help='where the results, the figure and the runs\' records go')
    ap.add_argument('--out_root', default='runs/peer_trl')
    ap.add_argument('--trl_bf16', action='store_true', help="TRL's default bf16 autocast instead of fp32")
    ap.add_argument('--trl_eval_minutes', type=float, default=None, help='evaluate TRL every this many training minutes (default: 5 points per run)')
    ap.add_argument('--smoke', action='store_true', help='two TRL steps on the tiny model (CI)')
    ap.add_argument('--reference', default=None, help="the system the others are timed against: a label, or 'best_on_policy' (of the sync and "
                    "TRL systems, the highest median final); default: the TRL system")
    ap.add_argument('--working', type=int, default=0, help="sample this many replies per held-out problem from each final policy and "
                    "measure how varied the right ones are (benchmarks/working.py), compared with the reference at equal accuracy; 0: off")
    ap.add_argument('--working_prompts', type=int, default=100, help='--working: the first this many held-out problems')
    ap.add_argument('--working_systems', nargs='+', default=None, help='--working: these systems only (labels; default: all)')
    ap.add_argument('--resume', action='store_true', help='keep the runs whose records exist (after an interruption)')
    ap.add_argument('--report', action='store_true', help='run nothing: analyse the kept records among those asked for')
    ap.add_argument('--trl_loss', default=None, help=argparse.SUPPRESS)  # --one: TRL's loss_type (None: its default)
    ap.add_argument('--one', action='store_true', help=argparse.SUPPRESS)  # a single TRL run, in this process
    ap.add_argument('--seed', type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument('--keep_policy', action='store_true', help=argparse.SUPPRESS)  # --one: save the final weights
    ap.add_argument('--out', default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv[:argv.index('--')] if '--' in argv else argv)
    from tba_kit.config import Config
    if a.smoke:
        job = dict(model='tiny', task='arithmetic', task_args=dict(n_train=16, n_test=8, answer_prefix='The answer is'),
                   k=2, prompts_per_step=2, max_new_tokens=4, eval_max_new_tokens=4, steps=2, time_limit=5, precision='fp32',
                   lr_schedule='cosine', lr_schedule_by='time')  # the main job's kind of schedule
        if a.config != DEFAULT_CONFIG:  # another job's task and prompt (16 training problems, 8 held out), its replies cut to 16 tokens
            other = Config.load(ROOT / a.config)
            job |= dict(task=other.task, task_args=other.task_args | dict(n_train=16, n_test=8), max_new_tokens=16, eval_max_new_tokens=16)
        cfg = Config.load(None, job)
        out = Path(a.out or ROOT / 'runs' / 'peer_trl_smoke')
        trl_run(cfg, out)
        ev = evaluations(out)
        print(json.dumps({'steps': json.loads((out / 'summary.json').read_text())['steps'], 'evaluations': len(ev), 'accuracy': [e['accuracy'] for e in ev]}))
        return
    cfg = Config.load(ROOT / a.config, [f'--seed={a.seed}', *extra])
    if a.one:
        trl_run(cfg, Path(a.out), a.trl_bf16, a.trl_eval_minutes or cfg.time_limit / 5, a.keep_policy, a.trl_loss); return
    if a.tune:
        systems = [(f'{k}_lr{lr}_{sch}', k, [f'--lr={lr}'] + (['--lr_schedule=constant'] if sch == 'constant' else []))
                   for lr in a.lrs for sch in a.schedules for k in a.kinds]
        extra = [*extra, f'--validation={a.validation}', '--eval_samples=0']  # greedy accuracy chooses: no sampled evaluations
    else: systems = [parse_system(s) for s in a.systems]
    differ = audit(systems, a.config, extra)
    runs = run_all(systems, a.seeds, a, extra, a.working, a.working_prompts, a.working_systems)
    if not runs: sys.exit(f"no finished runs in {a.results}/{a.name}_runs")
    res = analyse(runs, {s: [json.loads(r.read_text())['wall_seconds'] for r in fs] for s, fs in runs.items()}, Path(a.results) / f'{a.name}.svg',
                  a.reference, {label for label, kind, _ in systems if kind != 'async'})
    report(res)
    if a.tune:
        res['chosen'] = choose({s: fs for s, fs in runs.items() if s in res['systems']}, systems)
        print("\nChosen on the validation problems (median final accuracy over the tuning seeds):")
        for kind, c in res['chosen'].items(): print(f"  {kind}: {c['label']} ({c['accuracy']:.1%} over {c['seeds']} seeds)")
        print("Then: python benchmarks/peer_trl.py --seeds 0 1 2 3 4 --systems " + ' '.join(f"'{k}={k} {' '.join(c['overrides'])}'" for k, c in res['chosen'].items()))
    (Path(a.results) / f'{a.name}.json').write_text(json.dumps({**provenance(), 'config': a.config, 'overrides': extra, 'trl_bf16': a.trl_bf16,
        'seeds': a.seeds, 'systems': {s: {'kind': k, 'overrides': o, 'differs_in': differ.get(s, [])} for s, k, o in systems},
        'runs': {s: [rel(f) for f in fs] for s, fs in runs.items()}, 'results': res}, indent=1))


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): each system's final accuracy (held-out, or validation when tuning)"
    return system_claims(rec, 'validation accuracy' if any(o.startswith('--validation=') for o in rec['overrides']) else 'held-out accuracy')


if __name__ == '__main__': main()
