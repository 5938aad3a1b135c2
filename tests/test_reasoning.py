"""The second job (configs/reasoning.yaml): its task as chosen (worked, free-form replies whose last number is read,
500 held-out problems never trained on), a few steps of each mode on the tiny model, and TRL fed its tokens."""
import json, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / 'configs' / 'reasoning.yaml'


def test_the_second_jobs_task_asks_for_working_and_reads_the_last_number():
    pytest.importorskip('reasoning_gym')
    from tba_kit.config import Config
    from tba_kit.tasks import make_task
    cfg = Config.load(CONFIG)
    assert cfg.max_new_tokens >= 64 and cfg.eval_max_new_tokens == cfg.max_new_tokens  # room to work, in training and evaluation alike
    task = make_task(cfg.task, **cfg.task_args)
    train, test = task.prompts('train'), task.prompts('test')
    assert len(test) == 500 and len(train) > 5000
    assert not {p.text() for p in test} & {p.text() for p in train}  # held out: never trained on
    p = test[0]
    assert [m['role'] for m in p.messages] == ['system', 'user']  # no reply prefix: the model writes its working first
    assert 'step by step' in p.messages[0]['content']
    a = p.fields['answer']
    worked = [f"First, I work it out. The answer is {a}.", f"The answer is {a}. Check: 12", "I cannot tell."]
    assert task.reward([p.messages] * 3, worked, answer=[a] * 3) == [1.0, 0.0, 0.0]  # GSM8K's rule: the last number counts


@pytest.mark.slow
@pytest.mark.process
@pytest.mark.parametrize('mode', ['async', 'sync'])
def test_the_second_job_trains_on_the_tiny_model(tmp_path, mode):
    cmd = [sys.executable, '-m', 'tba_kit.cli', 'train', str(CONFIG), '--model=tiny', f'--mode={mode}', '--steps=2', '--time_limit=null',
           '--lr_schedule_by=steps', '--decay_steps=1', '--max_new_tokens=16', '--eval_max_new_tokens=16', '--eval_limit=8', '--eval_every=0',
           '--prefill=8', '--checkpoint_every=0', '--no-progress', f'--out_dir={tmp_path}']
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    cfg = json.loads((tmp_path / 'config.json').read_text())
    assert cfg['mode'] == mode and 'system' in cfg['task_args'] and cfg['task_args']['dataset'] == 'chain_sum'
    steps = [r for r in map(json.loads, open(tmp_path / 'metrics.jsonl')) if 'train/step' in r]
    assert [r['train/step'] for r in steps] == [1, 2]
    assert all(r['train/rows'] == cfg['k'] * cfg['prompts_per_step'] for r in steps)
    if mode == 'sync': assert all(r['train/generate_seconds'] > 0 for r in steps)  # the split the job was chosen by is measured
    answers = [json.loads(l) for l in (tmp_path / 'evals' / 'step_000002.jsonl').read_text().splitlines()]
    assert len(answers) == 8 and all('correct' in a for a in answers)
    if mode == 'sync': check_working(tmp_path)


def check_working(run):
    "benchmarks/working.py on the run's final policy: K samples of each of the first problems, the right ones' spread per problem, then its weights go"
    sys.path.insert(0, str(ROOT / 'benchmarks'))
    import working
    w = working.measure(run, str(CONFIG), 0, [], samples=4, prompts=6)
    kept = json.loads((run / 'working.json').read_text())
    assert len(w['measures']) == len(kept['examples']) == 6 and kept['temperature'] == 0.7  # the job's sampling temperature
    for m, ex in zip(w['measures'], kept['examples']):
        assert len(ex['samples']) == len(ex['samples_correct']) == 4 and m['right'] == sum(ex['samples_correct'])
        assert m['texts'] <= m['right'] and (m['answers'] == 1 if m['right'] else m['answers'] == 0)  # one right answer a problem
    assert working.summary(w)['accuracy'] == pytest.approx(sum(ex['sampled_accuracy'] for ex in kept['examples']) / 6)
    assert not (run / 'checkpoints').exists()  # measured, then dropped
    with pytest.raises(ValueError, match='other problems'): working.analyse({'a': [w, w | {'problems': w['problems'][::-1]}]})


@pytest.mark.slow
@pytest.mark.process
def test_trl_runs_the_second_job_from_tba_kits_tokens(tmp_path):
    "peer_trl's smoke on the second job: TRL's prompt ids equal the searchers' for every training problem, two steps, two evaluations"
    pytest.importorskip('trl')
    r = subprocess.run([sys.executable, str(ROOT / 'benchmarks' / 'peer_trl.py'), '--smoke', '--config', 'configs/reasoning.yaml', '--out', str(tmp_path / 'trl')],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got['steps'] == 2 and got['evaluations'] == 2, got
    assert json.loads((tmp_path / 'trl' / 'summary.json').read_text())['prompts_checked_equal'] == 16
    from tba_kit.config import Config
    from tba_kit.tasks import make_task
    cfg = Config.load(CONFIG)
    held_out = [p.text() for p in make_task(cfg.task, **cfg.task_args | dict(n_train=16, n_test=8)).prompts('test')]
    evals = (tmp_path / 'trl' / 'evals' / 'step_000000.jsonl').read_text().splitlines()
    assert [json.loads(l)['prompt'] for l in evals] == held_out  # the second job's problems, scored as tba_kit scores them
