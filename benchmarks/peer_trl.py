"""tba_kit's main job beside TRL's GRPOTrainer on exactly the same job: model, prompts (chat template, the reply
started with "The answer is"), reward, K completions per prompt, prompts per step, learning rate, completion length,
sampling temperature, held-out greedy evaluation (tba_kit's `evaluate`, the same problems), and the same budget of
training minutes (evaluations excluded). Each run is its own process, one at a time, seeds interleaved.

    python benchmarks/peer_trl.py --seeds 0 1 2 3 4 [--systems trl async sync] [--name peer_trl]
    python benchmarks/peer_trl.py --seeds 0 1 2 3 4 --report   # analyse the finished runs only (--resume: run the rest)
    python benchmarks/peer_trl.py --smoke          # CI: two TRL steps on the tiny model, evaluated, in seconds

TRL (pip install trl) runs with its own defaults where the main job does not fix a setting: loss_type 'dapo', beta 0
(no KL), scale_rewards 'group', one generation per step; the job's learning-rate schedule (constant) instead of TRL's
linear decay over max_steps; in fp32 on a CPU as tba_kit's CPU trainer (TRL's default is
bf16 autocast: `--trl_bf16` to use it). Runs are written in tba_kit's run-folder format (metrics.jsonl, evals/), so
one analysis reads both: median final accuracy over seeds with a bootstrap interval over seeds and problems, steps,
seconds per step, and the time tba_kit needs to reach TRL's median final accuracy. The figure (accuracy against
training minutes) goes to benchmarks/results/<name>.svg.
"""
import argparse, json, os, sys, time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import curve_svg, evaluations, final_with_interval, median, time_to, timed_run  # noqa: E402


def clock_schedule(cfg):
    "For lr_schedule_by: time, the rate at (training seconds, updates done) as tba_kit's Trainer.follow sets it; else None"
    if cfg.lr_schedule_by != 'time': return None
    import torch
    from tba_kit.trainer import clock_step, lr_scheduler
    fn = lr_scheduler(torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=cfg.lr), cfg.lr_schedule, cfg.warmup_steps, cfg.steps,
                      cfg.decay_steps, cfg.stable_steps).lr_lambdas[0]
    return lambda seconds, updates: cfg.lr * fn(clock_step(seconds / (60 * cfg.time_limit), updates, cfg.steps))


def trl_run(cfg, out:Path, bf16:bool=False, eval_minutes:float|None=None, keep_policy:bool=False):
    "TRL's GRPOTrainer on `cfg`'s job for cfg.time_limit minutes of training; evaluations as tba_kit's, into `out` (`keep_policy`: its final weights too)"
    if cfg.temperature_final is not None:
        raise ValueError(f"temperature_final={cfg.temperature_final}: TRL's GRPOTrainer samples at one temperature; drop the anneal for its runs")
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer
    from tba_kit.build import make_policy
    from tba_kit.evaluation import evaluate
    from tba_kit.tasks import make_task
    torch.manual_seed(cfg.seed); torch.set_num_threads(os.cpu_count() or 1)
    t0 = time.perf_counter()
    task, (model, tok) = make_task(cfg.task, **cfg.task_args), make_policy(cfg)
    data = Dataset.from_list([{'prompt': p.messages, **p.fields} for p in task.prompts('train')])
    def reward(prompts, completions, completion_ids=None, **columns): return task.reward(prompts, completions, completion_ids, **columns)
    reward.__name__ = task.name
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
        "Stop after cfg.time_limit minutes of training; evaluate every `eval_minutes` of training; the lr over the minutes as tba_kit's (lr_schedule_by: time)"
        def __init__(self): self.next, self.t_step, self.lr = eval_minutes * 60 if eval_minutes else None, None, None
        def on_step_begin(self, args, state, control, optimizer=None, **kw):
            self.t_step = time.perf_counter()
            if follow is not None:  # before this update: TRL's own (constant) scheduler resets the rate after it
                self.lr = follow(self.t_step - t0 - clock['eval'] - clock['load'], state.global_step)
                for g in optimizer.param_groups: g['lr'] = self.lr
        def on_step_end(self, args, state, control, **kw):
            train = time.perf_counter() - t0 - clock['eval'] - clock['load']
            log.write(json.dumps({'step': state.global_step, 'train/step': state.global_step, 'time/seconds': time.perf_counter() - t0,
                                  'time/train_seconds': train, 'train/step_seconds': time.perf_counter() - self.t_step}
                                 | ({'train/lr': self.lr} if self.lr is not None else {})) + '\n')
            if train >= 60 * cfg.time_limit or state.global_step >= cfg.steps: control.should_training_stop = True  # evaluated after
            elif self.next is not None and train >= self.next: evaluate_now(state.global_step); self.next += eval_minutes * 60
    args = GRPOConfig(output_dir=str(out / 'trl'), num_generations=cfg.k, per_device_train_batch_size=cfg.k * cfg.prompts_per_step,
                      gradient_accumulation_steps=1, learning_rate=cfg.lr, lr_scheduler_type='constant' if follow else cfg.lr_schedule, warmup_steps=cfg.warmup_steps,
                      max_completion_length=cfg.max_new_tokens, weight_decay=cfg.weight_decay,
                      temperature=cfg.temperature, top_p=cfg.top_p, max_grad_norm=cfg.max_grad_norm or 0., max_steps=cfg.steps,
                      use_cpu=cfg.device == 'cpu', bf16=bf16, seed=cfg.seed, logging_steps=1, save_strategy='no', report_to='none',
                      disable_tqdm=True, dataloader_num_workers=0)
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=data, processing_class=tok, callbacks=[Budget()])
    clock['load'] = time.perf_counter() - t0
    evaluate_now(0, sampled=True)
    trainer.train()
    evaluate_now(trainer.state.global_step, sampled=True)
    log.close()
    if keep_policy:  # benchmarks/diversity.py measures it
        from safetensors.torch import save_model
        save_model(model, str(out / 'policy.safetensors'))
    (out / 'summary.json').write_text(json.dumps({'steps': trainer.state.global_step, 'seconds': time.perf_counter() - t0, 'trl_bf16': bf16}))


def run_one(system, seed, out:Path, config, extra, trl_bf16, resume=False):
    "Run one system and seed in its own process; its wall-clock seconds (kept in the folder: `resume` reuses a finished run)"
    if system == 'trl':
        cmd = [sys.executable, __file__, '--one', '--config', config, '--seed', str(seed), '--out', str(out)] + (['--trl_bf16'] if trl_bf16 else []) + ['--', *extra]
    else:
        both = ['--searcher_threads=2'] if system == 'sync' else []  # sync: generation has the machine to itself
        cmd = [sys.executable, '-m', 'tba_kit.cli', 'train', config, f'--mode={system}', f'--seed={seed}', f'--out_dir={out}', '--no-progress', *both, *extra]
    return timed_run(cmd, out, resume)


def analyse(runs:dict, walls:dict, name:str) -> dict:
    "Per system: median final accuracy with its interval, steps and seconds per step; tba_kit's time to TRL's median final accuracy"
    res = {}
    for system, folders in runs.items():
        steps = [max(r['step'] for r in map(json.loads, open(f / 'metrics.jsonl'))) for f in folders]
        res[system] = {'final': final_with_interval(folders), 'initial': float(np.mean(evaluations(folders[0])[0]['correct'])),
                       'steps': steps,
                       'seconds_per_step': float(np.median([evaluations(f)[-1]['train'] / n for f, n in zip(folders, steps)])),  # generation included
                       'wall_minutes': [w / 60 for w in walls[system]],
                       'training_minutes': [evaluations(f)[-1]['train'] / 60 for f in folders]}
    if 'trl' in runs:
        target, trl_min = res['trl']['final']['median'], median(res['trl']['training_minutes'])
        for system in runs:
            t = [time_to(f, target) for f in runs[system]]
            res[system]['minutes_to_trl_median'] = [None if x is None else x / 60 for x in t]
            reached = [x / 60 for x in t if x is not None]
            res[system]['ratio_to_trl_time'] = (median(reached) / trl_min) if len(reached) > len(t) / 2 else None  # the median seed must reach it
    curve_svg(runs, ROOT / 'benchmarks' / 'results' / f'{name}.svg')
    return res


def report(res:dict):
    print("\n| system | seeds | held-out accuracy before | final (median, 95% interval) | per seed | steps | s / step | training min | minutes to TRL's median |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s, r in res.items():
        f = r['final']
        to = ', '.join('never' if x is None else f'{x:.1f}' for x in r.get('minutes_to_trl_median', []))
        print(f"| {s} | {len(f['per_seed'])} | {r['initial']:.1%} | {f['median']:.1%} [{f['lo']:.1%}, {f['hi']:.1%}] | "
              f"{', '.join(f'{x:.1%}' for x in f['per_seed'])} | {', '.join(map(str, r['steps']))} | {r['seconds_per_step']:.2f} | "
              f"{median(r['training_minutes']):.1f} | {to} |")
    for s, r in res.items():
        if s != 'trl' and r.get('ratio_to_trl_time') is not None: print(f"{s}: reaches TRL's median final accuracy in {r['ratio_to_trl_time']:.2f}x TRL's training time")


def main():
    argv = sys.argv[1:]
    extra = argv[argv.index('--') + 1:] if '--' in argv else []
    ap = argparse.ArgumentParser()
    ap.add_argument('--config', default='configs/quickstart.yaml')
    ap.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2, 3, 4])
    ap.add_argument('--systems', nargs='+', default=['trl', 'async', 'sync'])
    ap.add_argument('--name', default='peer_trl')
    ap.add_argument('--out_root', default='runs/peer_trl')
    ap.add_argument('--trl_bf16', action='store_true', help="TRL's default bf16 autocast instead of fp32")
    ap.add_argument('--trl_eval_minutes', type=float, default=None, help='evaluate TRL every this many training minutes (default: 5 points per run)')
    ap.add_argument('--smoke', action='store_true', help='two TRL steps on the tiny model (CI)')
    ap.add_argument('--resume', action='store_true', help='keep runs already finished in out_root (after an interruption)')
    ap.add_argument('--report', action='store_true', help='run nothing: analyse the finished runs in out_root among those asked for')
    ap.add_argument('--one', action='store_true', help=argparse.SUPPRESS)  # a single TRL run, in this process
    ap.add_argument('--seed', type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument('--keep_policy', action='store_true', help=argparse.SUPPRESS)  # --one: save the final weights
    ap.add_argument('--out', default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv[:argv.index('--')] if '--' in argv else argv)
    from tba_kit.config import Config
    if a.smoke:
        cfg = Config.load(None, dict(model='tiny', task='arithmetic', task_args=dict(n_train=16, n_test=8, answer_prefix='The answer is'),
                                     k=2, prompts_per_step=2, max_new_tokens=4, eval_max_new_tokens=4, steps=2, time_limit=5, precision='fp32',
                                     lr_schedule='cosine', lr_schedule_by='time'))  # the main job's kind of schedule
        out = Path(a.out or ROOT / 'runs' / 'peer_trl_smoke')
        trl_run(cfg, out)
        ev = evaluations(out)
        print(json.dumps({'steps': json.loads((out / 'summary.json').read_text())['steps'], 'evaluations': len(ev), 'accuracy': [e['accuracy'] for e in ev]}))
        return
    cfg = Config.load(ROOT / a.config, [f'--seed={a.seed}', *extra])
    if a.one:
        trl_run(cfg, Path(a.out), a.trl_bf16, a.trl_eval_minutes or cfg.time_limit / 5, a.keep_policy); return
    runs, walls = {s: [] for s in a.systems}, {s: [] for s in a.systems}
    for seed in a.seeds:
        for system in a.systems:
            out = ROOT / a.out_root / f'{system}_seed{seed}'
            if a.report and not (out / 'wall_seconds').exists(): continue
            walls[system].append(run_one(system, seed, out, a.config, extra, a.trl_bf16, a.resume or a.report))
            runs[system].append(out)
            ev = evaluations(out)
            print(f"{system} seed {seed}: {ev[0]['accuracy']:.1%} -> {ev[-1]['accuracy']:.1%} in {walls[system][-1] / 60:.1f} min", flush=True)
    runs = {s: fs for s, fs in runs.items() if fs}
    res = analyse(runs, {s: walls[s] for s in runs}, a.name)
    report(res)
    (ROOT / 'benchmarks' / 'results' / f'{a.name}.json').write_text(json.dumps({'config': a.config, 'overrides': extra, 'trl_bf16': a.trl_bf16,
        'runs': {s: [str(f.relative_to(ROOT)) for f in fs] for s, fs in runs.items()}, 'results': res}, indent=1))


if __name__ == '__main__': main()
