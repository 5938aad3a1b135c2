"""Keep a finished run's small records as data the notebooks draw from, without its checkpoints or machine paths.

    python tools/keep_run.py runs/demo/async nbs/data/kept_runs/main_async --command "tba train configs/quickstart.yaml ..."

Writes to the destination folder: `metrics.jsonl` and `timeline.jsonl` as the run wrote them (every figure of
`tba_kit.viz` reads the folder as it reads a run's), `config.json` (its `out_dir` made the destination's name),
`buffer.json` (the trainer's version and each buffered completion's version and reward, from the newest checkpoint:
what `viz.buffer_histograms` draws), `examples.jsonl` (the first few held-out problems of the first and last
evaluations, with the completion each got) and `provenance.json` (the command that made the run, the commit, the
machine). A few hundred kB in all, where the run folder holds gigabytes of weights. With `--answers` (a run of the
multiples task, configs/multiples.yaml), also `answers.json`: the final policy's exact probability of every held-out
prompt's right answers beside the objective's target (benchmarks/diversity.py's measure; what `viz.answers` draws).
"""
import argparse, json, shutil, sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import provenance  # noqa: E402
from tba_kit.checkpoints import find_checkpoint  # noqa: E402


def buffer_record(run:Path) -> dict:
    "The trainer's version and every buffered completion's version and reward, from the run's newest checkpoint"
    ck = find_checkpoint(run)
    rows = torch.load(ck / 'buffer.pt', weights_only=False)['rows']
    version = torch.load(ck / 'state.pt', weights_only=False)['version']
    return {'version': int(version), 'versions': rows['version'].tolist(), 'rewards': [round(float(r), 6) for r in rows['reward'].tolist()]}


def examples(run:Path, n:int) -> list:
    "The first `n` problems of the first and the last evaluation, with the step each was evaluated at"
    files = sorted((run / 'evals').glob('step_*.jsonl'))
    pick = files[:1] + files[-1:] if len(files) > 1 else files
    return [{'step': int(f.stem.split('_')[1]), **json.loads(l)} for f in pick for l in f.read_text().splitlines()[:n]]


def answers(run:Path) -> dict:
    "The exact answer distributions of the run's final policy (also left in the run as answers.json; its checkpoint kept), probabilities to 6 decimals"
    from diversity import compact, measure
    return compact(measure(run, None, 0, [], drop=False))


def keep(run:Path, dest:Path, command:str, n:int=6, with_answers:bool=False) -> Path:
    "Write the small records of finished run `run` to `dest` (replaced if it exists)"
    if not (run / 'metrics.jsonl').exists(): raise FileNotFoundError(f"{run} has no metrics.jsonl: give a run's folder")
    if dest.exists(): shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for f in ('metrics.jsonl', 'timeline.jsonl'): shutil.copy(run / f, dest / f)
    cfg = json.loads((run / 'config.json').read_text()) | {'out_dir': f"runs/{dest.name}"}
    (dest / 'config.json').write_text(json.dumps(cfg, indent=1) + '\n')
    (dest / 'buffer.json').write_text(json.dumps(buffer_record(run), separators=(',', ':')) + '\n')
    (dest / 'examples.jsonl').write_text(''.join(json.dumps(e) + '\n' for e in examples(run, n)))
    (dest / 'provenance.json').write_text(json.dumps(provenance() | {'command': command}, indent=1) + '\n')
    if with_answers: (dest / 'answers.json').write_text(json.dumps(answers(run), separators=(',', ':')) + '\n')
    return dest


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('run', type=Path, help="the finished run's folder")
    ap.add_argument('dest', type=Path, help='where its records go, e.g. nbs/data/kept_runs/NAME')
    ap.add_argument('--command', required=True, help='the command that made the run, as it was typed')
    ap.add_argument('--examples', type=int, default=6, help='held-out problems kept from the first and last evaluations')
    ap.add_argument('--answers', action='store_true', help="also the final policy's exact answer distributions (a multiples run)")
    a = ap.parse_args()
    out = keep(a.run, a.dest, a.command, a.examples, a.answers)
    print(f"{out}: {sum(f.stat().st_size for f in out.iterdir()) / 1e3:.0f} kB")
