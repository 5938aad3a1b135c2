"""Which reasoning task is the second job (issue 64, item 1)? Two criteria, fixed before any comparison runs: the
untrained SmolLM2 scores 5-30% greedy on held-out problems (room to learn and a signal to start from), and a
synchronous step spends at least half its time generating and scoring. For each candidate (a reasoning-gym family
with `configs/reasoning.yaml`'s free-form prompt: a system message asks for the working, then "The answer is <number>";
the reply up to 128 new tokens; the reward reads the last number), with the searchers' own dtype on this machine:

- the untrained model's greedy accuracy on `--n` held-out problems and the mean reply length;
- the mean accuracy of `--samples` samples at temperatures 1 and 0.7 on `--n_sampled` problems (the training reward's
  start: a group of K = 8 holds a right answer with probability 1 - (1 - this)^8, the groups that teach);
- a `--steps`-step synchronous probe of the config (`tba train ... --mode=sync --searcher_threads=2`, generation
  with the machine to itself, as the comparisons run it): seconds generating and scoring against training, per step,
  the first step left out (it loads and warms up).

The rule, fixed before any comparison runs: among those meeting both criteria, the one with the highest
sampled accuracy (the most groups with a right answer from the first step); then the sampling temperature of the two
that gives it more (each system of a comparison samples at it alike; the evaluation is greedy).

    python benchmarks/reasoning_candidates.py [--only NAME ...] --out benchmarks/results/reasoning_candidates.json
    python benchmarks/reasoning_candidates.py --final --out benchmarks/results/reasoning_candidates.json   # the chosen config, full and LoRA
"""
import argparse, json, shutil, statistics, subprocess, sys, time
from pathlib import Path

import torch
import yaml

from tba_kit.generation import generate_completions
from tba_kit.models import load_model
from tba_kit.tasks import encode_prompts, make_task, last_number, same_number
from tba_kit.config import Config

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import provenance, rel  # noqa: E402

CONFIG = ROOT / 'configs' / 'reasoning.yaml'
CANDIDATES = {  # name -> the reasoning-gym family and its arguments (replacing the config's)
    'chain_sum 2 digits, 2 terms': dict(dataset='chain_sum', min_digits=2, max_digits=2, min_terms=2, max_terms=2),
    'chain_sum 1 digit, 3-4 terms': dict(dataset='chain_sum', min_digits=1, max_digits=1, min_terms=3, max_terms=4),
    'chain_sum 1-2 digits, 2 terms': dict(dataset='chain_sum', min_digits=1, max_digits=2, min_terms=2, max_terms=2),
    'products 1 x 1-2 digits': dict(dataset='products', min_digits=1, max_digits=2, min_terms=2, max_terms=2),
    'basic_arithmetic 1 digit, 3 terms, + - *': dict(dataset='basic_arithmetic', min_digits=1, max_digits=1, min_terms=3, max_terms=3, operators=['+', '-', '*']),
}
LORA = dict(r=16, lora_alpha=32, target_modules='all-linear')


def task_args(cfg:dict, family:dict) -> dict:
    "The config's task arguments with the candidate's family in place of its own"
    keep = {k: v for k, v in cfg['task_args'].items() if k in ('n_train', 'n_test', 'system', 'answer_prefix', 'pool')}
    return keep | family


def accuracy(model, tok, task, n:int, n_sampled:int, samples:int, max_new:int, temperatures=(1.0, 0.7)) -> dict:
    "The untrained model's greedy accuracy and reply length on n held-out problems; mean accuracy of `samples` samples at each temperature on n_sampled"
    prompts = task.prompts('test')
    right = lambda ids, p: same_number(last_number(tok.decode(ids, skip_special_tokens=True)), p.fields['answer'])
    pids = encode_prompts(tok, [p.messages for p in prompts[:n]])
    greedy = generate_completions(model, tok, pids, k=1, greedy=True, max_new_tokens=max_new, batch_size=128)
    sampled = {t: generate_completions(model, tok, pids[:n_sampled], k=samples, temperature=t, max_new_tokens=max_new, batch_size=128) for t in temperatures}
    lengths = [len(g[0][0]) for g in greedy]
    return {'greedy_accuracy': statistics.mean(right(g[0][0], p) for g, p in zip(greedy, prompts)),
            'sampled_accuracy': {str(t): statistics.mean(right(c, p) for grp, p in zip(s, prompts) for c, _ in grp) for t, s in sampled.items()},
            'greedy_reply_tokens': statistics.mean(lengths), 'greedy_replies_cut': sum(n >= max_new for n in lengths) / len(lengths),
            'example': [prompts[0].messages[-1]['content'], tok.decode(greedy[0][0][0], skip_special_tokens=True)]}


def probe(mode:list, overrides:list, steps:int, out:Path, python:str=sys.executable, config:Path=CONFIG) -> tuple:
    """`tba train config` for `steps` steps without evaluation or checkpoints, `mode`'s arguments before the fixed ones and
    `overrides` after, run by `python` (another environment's interpreter: vLLM's; this checkout's tba_kit either way):
    the command as recorded and the metrics rows of its trainer steps"""
    cmd = [python, '-m', 'tba_kit.cli', 'train', str(config), *mode, f'--steps={steps}', '--lr_schedule=constant', '--lr_schedule_by=steps',
           '--time_limit=null', '--eval=false', '--checkpoint_every=0', '--no-progress', *overrides, f'--out_dir={out}']
    shutil.rmtree(out, ignore_errors=True)  # a probe before this one
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if r.returncode: sys.exit(f"the probe failed: {' '.join(cmd)}\n{r.stderr[-3000:]}")
    return ' '.join(cmd[1:]).replace(str(ROOT) + '/', ''), [r for r in map(json.loads, open(out / 'metrics.jsonl')) if 'train/step_seconds' in r]


def split(overrides:list, steps:int, out:Path, python:str=sys.executable, config:Path=CONFIG) -> dict:
    "A synchronous probe (`probe`) of `config` with `overrides`: seconds generating and scoring vs training per step (the first left out)"
    command, rows = probe(['--mode=sync', '--searcher_threads=2'], overrides, steps, out, python, config)
    rows = rows[1:]
    gen, train = [r['train/generate_seconds'] for r in rows], [r['train/step_seconds'] for r in rows]
    return {'command': command, 'steps_measured': len(rows), 'generate_seconds': gen, 'train_seconds': train,
            'generating_share': sum(gen) / (sum(gen) + sum(train)), 'train_tokens': [r['train/tokens'] for r in rows],
            'train_reward': statistics.mean(r['reward/mean'] for r in rows)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--n', type=int, default=200, help='held-out problems scored greedily')
    ap.add_argument('--n_sampled', type=int, default=32, help='held-out problems sampled')
    ap.add_argument('--samples', type=int, default=8)
    ap.add_argument('--steps', type=int, default=5, help='steps of the synchronous probe (the first is left out)')
    ap.add_argument('--only', nargs='*', default=None, help='names containing any of these words')
    ap.add_argument('--final', action='store_true', help='probe the config as it is (the chosen task at its temperature), with full and LoRA '
                                                         'training (r 16, all linear layers), kept beside the candidates')
    ap.add_argument('--out', default=None)
    a = ap.parse_args()
    torch.set_num_threads(2)
    cfg = yaml.safe_load(CONFIG.read_text())
    dtype = Config.load(CONFIG).resolve_precision()[0].searcher_dtype  # what the config's searchers run on this machine
    rec = json.loads(Path(a.out).read_text()) if a.out and Path(a.out).exists() else {'candidates': {}}
    save = lambda: a.out and Path(a.out).write_text(json.dumps(rec | provenance() | {'config': rel(CONFIG), 'dtype': str(dtype)}, indent=1))
    if a.final:
        out = ROOT / 'runs' / 'reasoning_candidates' / 'final'
        rec['final'] = f = {'task_args': cfg['task_args'], 'temperature': cfg['temperature'], 'sync_probe': split([], a.steps, out),
                            'sync_probe_lora': split([f'--lora={json.dumps(LORA)}'], a.steps, out.with_name('final_lora')),
                            'made': provenance()}  # its own command, commit and date: the file's are those of its newest part
        print(f"the config as it is: generating {f['sync_probe']['generating_share']:.0%} of a sync step, "
              f"{f['sync_probe_lora']['generating_share']:.0%} with LoRA; training reward {f['sync_probe']['train_reward']:.2f}")
        return save()
    model, tok = load_model(cfg['model'], dtype=dtype)
    rec |= {'n': a.n, 'n_sampled': a.n_sampled, 'samples': a.samples}
    for name, family in CANDIDATES.items():
        if a.only and not any(w in name for w in a.only): continue
        args = task_args(cfg, family)
        torch.manual_seed(0)
        t = time.perf_counter()
        rec['candidates'][name] = r = {'task_args': args, **accuracy(model, tok, make_task(cfg['task'], **args), a.n, a.n_sampled, a.samples, cfg['max_new_tokens'])}
        r['accuracy_seconds'] = time.perf_counter() - t
        r['made'] = provenance()
        r['sync_probe'] = split([f'--task_args={json.dumps(args)}', '--temperature=1.0'], a.steps,
                                ROOT / 'runs' / 'reasoning_candidates' / name.replace(' ', '_').replace(',', ''))
        print(f"{name:44s} greedy {r['greedy_accuracy']:6.1%}  sampled at T 1 / 0.7 {r['sampled_accuracy']['1.0']:6.1%} / {r['sampled_accuracy']['0.7']:6.1%}  "
              f"reply {r['greedy_reply_tokens']:5.1f} tokens  generating {r['sync_probe']['generating_share']:.0%} of a sync step", flush=True)
        save()


def claims(rec:dict) -> list:
    "The results ledger's rows: each candidate's untrained greedy and sampled accuracy and its sync step's share generating and scoring; the chosen config's"
    out = [{'claim': f"{name} ({rec['config']}'s prompt): untrained greedy accuracy on {rec['n']} held-out problems; mean accuracy of "
                     f"{rec['samples']} samples at T 1 and at T 0.7; mean greedy reply tokens; share of a sync step generating and scoring at T 1 "
                     f"(over {r['sync_probe']['steps_measured']} steps, {rec['dtype'].removeprefix('torch.')} searchers)",
            'value': f"{r['greedy_accuracy']:.1%}; {r['sampled_accuracy']['1.0']:.1%}, {r['sampled_accuracy']['0.7']:.1%}; {r['greedy_reply_tokens']:.0f}; "
                     f"{r['sync_probe']['generating_share']:.0%}"} for name, r in rec['candidates'].items()]
    if 'final' in rec:
        f = rec['final']
        out.append({'claim': f"{rec['config']} as chosen (T {f['temperature']}): share of a sync step generating and scoring, full training; with LoRA",
                    'value': f"{f['sync_probe']['generating_share']:.0%}; {f['sync_probe_lora']['generating_share']:.0%}"})
    return out


if __name__ == '__main__': main()
