"""Why a red-team trainer step is slow (issue 23, item 3): one trainer step on a batch shaped like the red-team job's
(configs/redteam.yaml: its first 4 attack instructions, of the 95-157 tokens instructions have, x 8 attacks of 40 tokens) beside one shaped like the main
job's (configs/quickstart.yaml), each with its config's precision and trainer threads, then a torch.profiler table of
the red-team step's costliest operators. Completions are random tokens of the full length (their content does not
change the cost). Run it alone on the machine. Writes benchmarks/results/redteam_step.json.

    python benchmarks/redteam_step.py [--steps 4]
"""
import argparse, json, statistics, sys, time
from pathlib import Path

import torch

from tba_kit.build import make_objective, make_policy
from tba_kit.config import Config
from tba_kit.core import Trajectory, collate
from tba_kit.tasks import encode_prompts, make_task
from tba_kit.trainer import Trainer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import provenance  # noqa: E402

JOBS = {'main job': 'configs/quickstart.yaml', 'red-team': 'configs/redteam.yaml'}


def job_batch(cfg, tok, task):
    "prompts_per_step training prompts of the task, each with k completions of max_new_tokens random tokens"
    prompts = task.prompts('train')[:cfg.prompts_per_step]
    gen = torch.Generator().manual_seed(0)
    n, encoded = cfg.max_new_tokens, encode_prompts(tok, [p.messages for p in prompts])
    groups = [[Trajectory(p.id, ids, torch.randint(100, 20000, (n,), generator=gen), -torch.rand(n, generator=gen), -1. - j, ref_logprob=-50.)
               for j in range(cfg.k)] for p, ids in zip(prompts, encoded)]
    return collate(groups, tok.pad_token_id), [len(ids) for ids in encoded]


def measure(name:str, config:str, steps:int, profile:bool) -> dict:
    cfg, _ = Config.load(ROOT / config).resolve_precision()
    torch.set_num_threads(cfg.trainer_threads)
    model, tok = make_policy(cfg)
    task = _task(cfg)
    trainer = Trainer(model, make_objective(cfg), lr=cfg.lr, precision=cfg.precision, micro_batch_rows=cfg.micro_batch_rows, pad_id=tok.pad_token_id)
    batch, prompt_lens = job_batch(cfg, tok, task)
    secs = []
    for _ in range(steps):
        t = time.perf_counter(); trainer.step(batch); secs.append(time.perf_counter() - t)
    rec = {'config': config, 'precision': cfg.precision, 'trainer_threads': cfg.trainer_threads, 'rows': len(batch),
           'prompt_tokens': prompt_lens, 'completion_tokens': cfg.max_new_tokens, 'padded_length': int(batch.input_ids.shape[1]),
           'step_seconds': secs, 'step_seconds_median': statistics.median(secs[1:])}
    # tokens the forward runs: each group's prompt once (shared) and every row's completion
    rec['tokens_per_step'] = sum(prompt_lens) + len(batch) * cfg.max_new_tokens
    rec['ms_per_token'] = 1e3 * rec['step_seconds_median'] / rec['tokens_per_step']
    if profile:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof: trainer.step(batch)
        table = prof.key_averages().table(sort_by='self_cpu_time_total', row_limit=15)
        print(table)
        rec['profile_top'] = [{'op': e.key, 'self_cpu_ms': e.self_cpu_time_total / 1e3, 'calls': e.count}
                              for e in sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[:15]]
    print(f"{name}: {rec['step_seconds_median']:.2f} s a step ({cfg.precision}, {cfg.trainer_threads} threads), {len(batch)} rows, prompts of "
          f"{min(prompt_lens)}-{max(prompt_lens)} tokens, completions of {cfg.max_new_tokens}, padded to {rec['padded_length']}: "
          f"{rec['tokens_per_step']} tokens, {rec['ms_per_token']:.2f} ms a token", flush=True)
    return rec


def _task(cfg):
    "The job's task; the red-team task's victim is not needed to train a step, so it is the tiny model"
    if cfg.task != 'redteam': return make_task(cfg.task, **cfg.task_args)
    from tba_kit.models import tiny_model
    from tba_kit.redteam import RedTeamTask, Victim
    args = cfg.task_args
    return RedTeamTask(Victim(*tiny_model(), n=1), n_train=args['n_train'], n_test=args['n_test'], instruction=args['instruction'])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--steps', type=int, default=4, help='timed steps per job (the first is a warm-up and not in the median)')
    a = ap.parse_args()
    if a.steps < 2: ap.error(f"--steps must be >= 2 (the first is a warm-up), got {a.steps}")
    res = {name: measure(name, config, a.steps, profile=name == 'red-team') for name, config in JOBS.items()}
    (ROOT / 'benchmarks' / 'results' / 'redteam_step.json').write_text(json.dumps({**provenance(), **res}, indent=1) + '\n')


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): a trainer step's seconds and milliseconds per token, red-team job against the main job's; the red-team step's matmul share"
    out = [{'claim': f"{name} trainer step ({r['config']}: {r['rows']} rows, prompts of {min(r['prompt_tokens'])}-{max(r['prompt_tokens'])} tokens, "
                     f"completions of {r['completion_tokens']}; {r['precision']}, {r['trainer_threads']} threads): seconds, ms per token",
            'value': f"{r['step_seconds_median']:.2f} s, {r['ms_per_token']:.2f} ms"} for name in JOBS if (r := rec.get(name))]
    if top := rec.get('red-team', {}).get('profile_top'):
        mm = sum(e['self_cpu_ms'] for e in top if e['op'] == 'aten::mm')
        out.append({'claim': "red-team trainer step: share of the profiled CPU time (its 15 costliest operators) in matmuls (aten::mm)", 'value': f"{mm / sum(e['self_cpu_ms'] for e in top):.0%}"})
    return out


if __name__ == '__main__': main()
