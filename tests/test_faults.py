"""What the user has is not lost: a resume continues the run in the folder it is given, overrides on resume are applied
or refused before anything is written, and a run folder is locked for the life of its run."""
import json, shutil, signal, subprocess, sys, time
from pathlib import Path

from test_loop import ROOT, TINY_CLI, tba_train, wait_for_steps
from tba_kit.loop import find_checkpoint


def train(*args, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'tba_kit.cli', 'train', *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def steps_of(out:Path) -> list: return [r['train/step'] for r in map(json.loads, open(out / 'metrics.jsonl')) if 'train/step' in r]


def test_resume_continues_the_copy_it_is_given_and_applies_a_new_lr(tmp_path):
    "Before: `--resume COPY` wrote into the original's out_dir (from config.json), and `--lr` on resume never reached the optimizer"
    a, b = tmp_path / 'a', tmp_path / 'b'
    assert train(*TINY_CLI, '--steps=2', f'--out_dir={a}').returncode == 0
    shutil.copytree(a, b)
    before = {p.name: p.read_bytes() for p in a.iterdir() if p.is_file()}
    r = train('--resume', str(b), '--steps=4', '--lr=3e-4', '--no-progress')
    assert r.returncode == 0, r.stderr[-3000:]
    assert steps_of(b) == [1, 2, 3, 4] and steps_of(a) == [1, 2]
    assert {p.name: p.read_bytes() for p in a.iterdir() if p.is_file()} == before  # the original is untouched
    assert find_checkpoint(a).name == 'step_000002' and find_checkpoint(b).name == 'step_000004'
    rows = [x for x in map(json.loads, open(b / 'metrics.jsonl')) if 'train/step' in x]
    assert rows[-1]['train/lr'] == 3e-4  # applied ...
    assert json.loads((b / 'config.json').read_text())['lr'] == 3e-4  # ... and recorded


def test_an_override_the_checkpoint_fixes_is_refused_and_nothing_changes(tmp_path):
    "Before: `--resume DIR --objective=tb` overwrote DIR's config.json, then failed loading the checkpoint"
    out = tmp_path / 'run'
    assert train(*TINY_CLI, '--steps=2', f'--out_dir={out}').returncode == 0
    files = {p: p.read_bytes() for p in out.rglob('*') if p.is_file() and p.name != '.lock'}
    for bad, field in [('--objective=tb', 'objective'), ('--model=smollm2-135m-instruct', 'model'), (f'--out_dir={tmp_path / "x"}', 'out_dir')]:
        r = train('--resume', str(out), bad, '--steps=3', '--no-progress')
        assert r.returncode == 2 and f"config field '{field}'" in r.stderr, (bad, r.stderr[-2000:])
    assert {p: p.read_bytes() for p in out.rglob('*') if p.is_file() and p.name != '.lock'} == files
    assert not (tmp_path / 'x').exists()


def test_a_live_run_folder_is_locked(tmp_path):
    "Before: a second run, or a resume, into the folder of a live run went ahead and interleaved its steps with the first"
    out = tmp_path / 'run'
    p = tba_train(*TINY_CLI, '--steps=100000', '--checkpoint_every=1', f'--out_dir={out}')
    try:
        wait_for_steps(out, 2, p)
        while not list((out / 'checkpoints').glob('step_*')): time.sleep(0.1)  # a resume needs a checkpoint to be tried at all
        for args in (['--resume', str(out), '--no-progress'], [*TINY_CLI, f'--out_dir={out}']):
            r = train(*args, '--steps=100000', timeout=120)
            assert r.returncode == 2 and f'in use by another run (pid {p.pid})' in r.stderr, r.stderr[-2000:]
    finally:
        p.send_signal(signal.SIGINT); p.communicate(timeout=120)
    n = steps_of(out)
    assert n == list(range(1, len(n) + 1))  # one run's steps, in order
    r = train('--resume', str(out), f'--steps={n[-1] + 1}', '--no-progress')  # the lock died with its process
    assert r.returncode == 0, r.stderr[-2000:]
    assert steps_of(out) == list(range(1, n[-1] + 2))


def test_bad_configs_are_refused_before_any_model_loads(tmp_path, monkeypatch, capsys):
    "Before: these ran silently (gradient ascent, 0 steps, ignored LoRA, all defaults, the last of two keys), misled, or failed late"
    import asyncio, pytest
    import tba_kit.loop as L
    from tba_kit.config import Config
    monkeypatch.setattr(L, 'make_policy', lambda cfg: pytest.fail('a model was loaded'))
    (tmp_path / 'file').write_text('x')
    bad = {'max_grad_norm': dict(max_grad_norm=-1.), 'time_limit': dict(time_limit=0), 'time_limit ': dict(time_limit=-5),
           'lora': dict(lora={'r': 4}), 'eval_limit': dict(eval_limit=0), 'prefill': dict(prefill=10_000, buffer_capacity=8),
           'k': dict(objective='ppo', k=1), 'wait_timeout': dict(wait_timeout=0), 'lr_schedule': dict(lr_schedule='cosin'),
           'out_dir': dict(out_dir=str(tmp_path / 'file' / 'run'))}
    tried = refused = 0
    for field, kw in bad.items():
        tried += 1
        with pytest.raises(ValueError, match=f"config field '{field.strip()}'"):
            asyncio.run(L.run(dict(model='tiny', task_args={'n_train': 40, 'n_test': 4}, k=4, out_dir=str(tmp_path / 'r')) | kw, progress=False))
        refused += 1
    for text, msg in [('', 'is empty'), ('steps: 3\nsteps: 4\n', "key 'steps' is given twice"), ('steps: [3\n', 'is not valid YAML'),
                      ('lora: {rr: 4}\nmodel: m\n', "config field 'lora'")]:
        tried += 1
        f = tmp_path / f'c{tried}.yaml'; f.write_text(text)
        with pytest.raises(ValueError, match=msg): Config.load(f)
        refused += 1
    with capsys.disabled(): print(f"\nbad configs refused before any model loaded: {refused} of {tried}")
    assert not (tmp_path / 'r').exists()  # nothing was written
