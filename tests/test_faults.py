"""What the user has is not lost: a resume continues the run in the folder it is given, overrides on resume are applied
or refused before anything is written, and a run folder is locked for the life of its run."""
import json, os, random, re, shutil, signal, subprocess, sys, time
from pathlib import Path

import pytest

from test_loop import ROOT, TINY_CLI, tba_train, wait_for_steps
from tba_kit.checkpoints import find_checkpoint
from tba_kit.weights import pid_alive


def train(*args, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'tba_kit.cli', 'train', *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def steps_of(out:Path) -> list: return [r['train/step'] for r in map(json.loads, open(out / 'metrics.jsonl')) if 'train/step' in r]


@pytest.mark.process
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


@pytest.mark.process
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


@pytest.mark.process
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


@pytest.mark.slow
def test_bad_configs_are_refused_before_any_model_loads(tmp_path, monkeypatch, capsys):
    "Before: these ran silently (gradient ascent, 0 steps, ignored LoRA, all defaults, the last of two keys), misled, or failed late"
    import asyncio
    import tba_kit.build as B, tba_kit.loop as L
    from tba_kit.config import Config
    monkeypatch.setattr(B, 'make_policy', lambda cfg: pytest.fail('a model was loaded'))
    (tmp_path / 'file').write_text('x')
    bad = {'max_grad_norm': dict(max_grad_norm=-1.), 'time_limit': dict(time_limit=0), 'time_limit ': dict(time_limit=-5),
           'lora': dict(lora={'r': 4}), 'eval_limit': dict(eval_limit=0), 'prefill': dict(prefill=10_000, buffer_capacity=8),
           'k': dict(objective='grpo', k=1), 'wait_timeout': dict(wait_timeout=0), 'lr_schedule': dict(lr_schedule='cosin'),
           'out_dir': dict(out_dir=str(tmp_path / 'file' / 'run')), 'model': dict(model=str(tmp_path / 'no_such_model')),
           'model ': dict(model='./checkpoints/step_000009'), 'engine': dict(placement='ray', engine='tba_kit.searchers:Engine'),
           'max_searchers': dict(placement='ray', searchers=2, max_searchers=1), 'searcher_cpus': dict(placement='ray', searcher_cpus=-1),
           'searcher_resources': dict(placement='ray', searcher_resources={'gpu_node': -1}),
           # from the second outside probe: accepted and run, or refused late or under another field's name
           'beta': dict(beta=float('inf')), 'temperature': dict(temperature=float('inf')), 'weight_decay': dict(weight_decay=-0.1),
           'log_z_lr': dict(log_z_lr=-1.), 'max_new_tokens': dict(max_new_tokens=100_000_000), 'out_dir  ': dict(out_dir=''),
           'ray_address': dict(ray_address='auto'), 'searcher_cpus ': dict(searcher_cpus=2.), 'max_searchers ': dict(max_searchers=3),
           'lr': dict(lr=float('inf')), 'eval_max_new_tokens': dict(eval_max_new_tokens=0), 'eval_max_new_tokens ': dict(eval_max_new_tokens=-5),
           'seed': dict(seed=-1), 'seed ': dict(seed=2 ** 70), 'max_staleness': dict(max_staleness=0, sync_every=4),
           'task': dict(task='probe_syntax:make'), 'task ': dict(task='probe_raises:make'),
           'lr_schedule_by': dict(lr_schedule='cosine', lr_schedule_by='time'), 'lr_schedule_by ': dict(lr_schedule_by='minutes', time_limit=5),
           'decay_steps': dict(lr_schedule='warmup_stable_decay', decay_steps=500, steps=100),
           'beta_final': dict(objective='grpo', beta_final=0.01, beta_steps=10),  # grpo's KL coefficient kl_coef is 0: nothing to schedule (was ignored)
           # from the third outside probe: spawned a million ranks, failed after the model loaded, or failed naming no field
           'trainer_procs': dict(trainer_procs=1_000_000), 'trainer_timeout': dict(trainer_timeout=0.001), 'device': dict(device='cuda:99'),
           'model  ': dict(model=str(tmp_path / 'empty_folder'))}
    (tmp_path / 'empty_folder').mkdir()
    (tmp_path / 'probe_syntax.py').write_text('def make(**kw):\n    return 1 +\n')
    (tmp_path / 'probe_raises.py').write_text('def make(**kw): raise RuntimeError("no data here")\n')
    (tmp_path / 'probe_surrogate.py').write_text('from tba_kit.tasks import PromptTask\n'
                                                 'def make(**kw): return PromptTask(["Say \\udc80 word"], lambda prompts, completions, **k: [0.] * len(completions), test=["x"])\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    tried = refused = 0
    for field, kw in bad.items():
        tried += 1
        with pytest.raises(ValueError, match=f"config field '{field.strip()}'"):
            asyncio.run(L.run(dict(model='tiny', task_args={'n_train': 40, 'n_test': 4}, k=4, out_dir=str(tmp_path / 'r')) | kw, progress=False))
        refused += 1
    for text, msg in [('', 'is empty'), ('steps: 3\nsteps: 4\n', "key 'steps' is given twice"), ('steps: [3\n', 'is not valid YAML'),
                      ('lora: {rr: 4}\nmodel: m\n', "config field 'lora'"), ('steps: 3\nmodel: caf\xe9\n', 'is not UTF-8 text')]:
        tried += 1
        f = tmp_path / f'c{tried}.yaml'; f.write_bytes(text.encode('latin-1'))
        with pytest.raises(ValueError, match=msg): Config.load(f)
        refused += 1
    tried += 1
    with pytest.raises(ValueError, match='not valid Unicode text'):  # a prompt with a lone surrogate, refused when the task is built
        B.build(Config.from_dict(dict(model='tiny', task='probe_surrogate:make', out_dir=str(tmp_path / 'r'))), progress=False)
    refused += 1
    with capsys.disabled(): print(f"\nbad configs refused before any model loaded: {refused} of {tried}")
    assert not (tmp_path / 'r').exists()  # nothing was written


# --- rewards and interruptions that hung, leaked or lost a row before (the second outside probe) ---

PROBE_TASK = """
import asyncio, os, time
from pathlib import Path
from tba_kit.tasks import PromptTask, completion_text
n = [0]

async def reward(prompts, completions, **kw):
    # PROBE=how, from the 4th batch on: 'coop' awaits forever, 'block' blocks its event loop, 'swallow' ignores cancellation,
    # 'exit' raises SystemExit, 'kbd' KeyboardInterrupt, 'dict' returns a dict; 'huge': 1e30 always; 'slow': 5 s a batch
    how = os.environ.get('PROBE', 'ok'); n[0] += 1
    if how == 'huge': return [1e30] * len(completions)
    if how == 'slow': time.sleep(5)
    if n[0] > 3:
        if how == 'coop': await asyncio.Event().wait()
        if how == 'block': time.sleep(10 ** 6)
        while how == 'swallow':
            try: await asyncio.sleep(1000)
            except asyncio.CancelledError: pass
        if how == 'exit': raise SystemExit(3)
        if how == 'kbd': raise KeyboardInterrupt
        if how == 'dict': return {i: 1. for i in range(len(completions))}
    return [sum(ch in 'aeiou' for ch in completion_text(c)) / max(len(completion_text(c)), 1) for c in completions]

class Probe(PromptTask):
    def evaluate(self, prompts, completions):
        "PROBE_EVAL_MARK=file: each evaluation appends a line to it, then takes 3 s"
        if mark := os.environ.get('PROBE_EVAL_MARK'):
            with open(mark, 'a') as f: f.write('eval\\n')
            time.sleep(3)
        return super().evaluate(prompts, completions)

def make(**kw): return Probe([f'Say word {i}' for i in range(12)], reward, test=['Say a word'], name='probe')
"""

PROBE_CLI = ['configs/quickstart.yaml', '--lr_schedule=constant', '--model=tiny', '--task=probe_task:make', '--task_args={}', '--k=4', '--prompts_per_step=2', '--search_prompts=2',
             '--max_new_tokens=6', '--prefill=8', '--precision=fp32', '--eval=false', '--no-progress']


def _start_probe(tmp_path, *args, **env) -> subprocess.Popen:
    "`tba train` on the probe task, with PROBE=... settings in its environment"
    (tmp_path / 'probe_task.py').write_text(PROBE_TASK)
    env = os.environ | {'PYTHONPATH': f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", **env}
    return subprocess.Popen([sys.executable, '-m', 'tba_kit.cli', 'train', *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _probe(tmp_path, *args, how='ok', timeout=180) -> subprocess.CompletedProcess:
    "Run the probe task to its end; a run that outlives `timeout` is killed and fails the test (a hang)"
    p = _start_probe(tmp_path, *args, PROBE=how)
    try: out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill(); p.communicate()
        raise AssertionError(f"tba train {' '.join(args)} (PROBE={how}) still ran after {timeout} s: it hung") from None
    res = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    res.pid = p.pid
    return res


def _shm_left(pid:int) -> list: return list(Path('/dev/shm').glob(f'tba_kit-weights-{pid}-*'))


@pytest.mark.process
@pytest.mark.parametrize('how', ['coop', 'block', 'swallow', 'exit', 'kbd', 'dict'])
def test_an_async_reward_that_hangs_or_escapes_stops_the_run_cleanly(tmp_path, how):
    """Before: an async reward that blocked its event loop or ignored cancellation hung the run for good (SIGTERM included), and one raising
    SystemExit ended it with exit 3, a traceback and a /dev/shm folder left. Now each failing batch is counted and the run stops with a checkpoint"""
    out = tmp_path / 'run'
    r = _probe(tmp_path, *PROBE_CLI, '--steps=40', '--reward_timeout=2', '--max_staleness=2', f'--out_dir={out}', how=how)
    why = {'exit': 'raised SystemExit', 'kbd': 'raised KeyboardInterrupt', 'dict': 'returned a dict'}.get(how, 'did not return within 2 s')
    assert r.returncode == 1 and 'reward batches failed; stopping' in r.stderr and why in r.stderr, r.stderr[-3000:]
    assert find_checkpoint(out).name == f'step_{max(steps_of(out), default=0):06d}'  # the last finished step is kept
    assert not _shm_left(r.pid)  # its weight snapshots went with it


@pytest.mark.process
def test_log_rewards_beyond_float32_resolution_are_refused(tmp_path):
    "Before: a reward of 1e30 for every completion trained with loss exactly 0 and no warning"
    out = tmp_path / 'run'
    r = _probe(tmp_path, *PROBE_CLI, '--steps=5', f'--out_dir={out}', how='huge')
    assert r.returncode == 2 and 'float32 resolves only to' in r.stderr and 'raise beta' in r.stderr, r.stderr[-3000:]
    assert not (out / 'metrics.jsonl').exists() and find_checkpoint(out).name == 'step_000000'  # refused before any update


@pytest.mark.process
def test_a_run_killed_before_its_first_checkpoint_says_how_to_start_again(tmp_path):
    "Before: `--resume` answered only 'no checkpoint', and with an evaluation logged the same command was refused as 'already holds a run'"
    out = tmp_path / 'run'
    p = _start_probe(tmp_path, *PROBE_CLI, '--eval=true', '--steps=4', f'--out_dir={out}', PROBE='slow')
    wait_for_steps(out, 1, p)  # the evaluation before training is logged; the pre-fill's rewards take 5 s a batch
    p.kill(); p.communicate(timeout=60)
    assert not list((out / 'checkpoints').glob('step_*'))
    r = _probe(tmp_path, '--resume', str(out))
    assert r.returncode == 2 and f"tba train {out / 'config.json'}" in r.stderr, r.stderr[-2000:]
    r = _probe(tmp_path, str(out / 'config.json'))  # the command it gives
    assert r.returncode == 0 and 'stopped before its first checkpoint' in r.stderr, r.stderr[-3000:]
    assert steps_of(out) == [1, 2, 3, 4]
    old = list(out.glob('stopped-*/metrics.jsonl'))
    assert len(old) == 1 and 'eval/accuracy' in old[0].read_text()  # what the first attempt logged is kept


@pytest.mark.process
def test_sigterm_during_an_evaluation_loses_no_row(tmp_path):
    "Before: SIGTERM while the run evaluated after step N checkpointed step N but never logged its row; the resume started at N + 1"
    out, mark = tmp_path / 'run', tmp_path / 'evals'
    p = _start_probe(tmp_path, *PROBE_CLI, '--eval=true', '--eval_every=4', '--steps=12', f'--out_dir={out}', PROBE_EVAL_MARK=str(mark))
    t = time.monotonic()
    while not (mark.exists() and len(mark.read_text().split()) >= 2):  # the evaluation before training, then the one after step 4
        assert p.poll() is None and time.monotonic() - t < 120, p.communicate()[1][-3000:]
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM); _, err = p.communicate(timeout=120)
    assert p.returncode == 130 and find_checkpoint(out).name == 'step_000004', err[-3000:]
    assert steps_of(out) == [1, 2, 3, 4]
    r = _probe(tmp_path, '--resume', str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    assert steps_of(out) == list(range(1, 13))  # every row once


# --- the fault-injection suite: real `tba train` processes, faults at random moments, every run taken to its last step ---

FAULTY_TASK = '''
import itertools, os, threading, time
from tba_kit.tasks import PromptTask, completion_text
calls = itertools.count(1)

def reward(prompts, completions, **kw):
    "Vowel share; TBA_FAULT=how:after makes calls after the first `after` raise, return None, or (every third) hang; 'slow' sleeps"
    how, _, after = os.environ.get('TBA_FAULT', 'ok').partition(':')
    n = next(calls)
    if how == 'slow': time.sleep(0.2)
    if how in ('raise', 'none', 'hang') and n > int(after or 0):
        if how == 'raise': raise RuntimeError('scorer backend down')
        if how == 'none': return [None] * len(completions)
        if how == 'hang' and n % 3 == 0: threading.Event().wait()
    return [sum(ch in 'aeiou' for ch in completion_text(c)) / max(len(completion_text(c)), 1) for c in completions]

def make(**kw): return PromptTask([f'Say word {i}' for i in range(12)], reward, test=['Say a word'], name='faulty')
'''

TARGET = 60  # steps every run must reach (about 10 s with the tiny model)


def _suite_env(tmp_path, fault='ok') -> dict:
    (tmp_path / 'faulty_task.py').write_text(FAULTY_TASK)
    return os.environ | {'PYTHONPATH': f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", 'TBA_FAULT': fault}


def _cli(out, *args, tmp_path, fault='ok', resume=False):
    "Start `tba train` on the faulty task (a fresh run, or a resume of `out`)"
    head = ['--resume', str(out)] if resume else [*TINY_CLI, '--task=faulty_task:make', f'--out_dir={out}']
    p = subprocess.Popen([sys.executable, '-m', 'tba_kit.cli', 'train', *head, f'--steps={TARGET}', '--checkpoint_every=4', *args],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_suite_env(tmp_path, fault))
    STARTED.append(p.pid)
    return p


STARTED = []  # the pids of the runs _cli started: their weight snapshots on /dev/shm are theirs (other tests may run beside, under pytest-xdist)


def _worker_of(pid:int) -> int:
    "The searcher process of run `pid` (its spawned child)"
    for _ in range(600):
        for d in Path('/proc').iterdir():
            try:
                if d.name.isdigit() and int((d / 'stat').read_text().rsplit(')', 1)[1].split()[1]) == pid and b'spawn_main' in (d / 'cmdline').read_bytes():
                    return int(d.name)
            except OSError: continue
        time.sleep(0.1)
    raise AssertionError('no searcher process')


def _last_step(out) -> int: return max(steps_of(out), default=0)


def _finish(out, tmp_path, log) -> int:
    "Resume `out` to the target with good rewards; returns the step it resumed from"
    p = _cli(out, tmp_path=tmp_path, resume=True)
    _, err = p.communicate(timeout=300)
    log.append(err)
    assert p.returncode == 0, err[-3000:]
    return int(re.search(r'resumed from \S+ at step (\d+)', err).group(1))


@pytest.mark.process
def test_fault_injection_suite(tmp_path, capsys):
    "Signals to the trainer and its searcher at random moments, corrupt checkpoints, a concurrent run, rewards that hang, fail or say None"
    seed = int(os.environ.get('TBA_FAULT_SEED', time.time_ns() % 10_000)); rng = random.Random(seed)
    with capsys.disabled(): print(f"\nfault injection: seed {seed} (TBA_FAULT_SEED={seed} repeats these moments)", flush=True)  # before any assertion can fail
    results, log = {}, []  # fault -> (survived, steps lost)

    def kill_trainer(name, sig, out):
        p = _cli(out, tmp_path=tmp_path)
        wait_for_steps(out, rng.randint(1, 20), p)
        if sig == signal.SIGKILL:  # SIGKILL leaves no time to save: before the first checkpoint there is nothing to resume (refused, tested above)
            while not list((out / 'checkpoints').glob('step_*')): assert p.poll() is None; time.sleep(0.05)
        time.sleep(rng.uniform(0, 0.5))
        p.send_signal(sig); _, err = p.communicate(timeout=120)
        assert p.returncode == (130 if sig != signal.SIGKILL else -9), err[-3000:]
        last = _last_step(out)
        results[name] = last - _finish(out, tmp_path, log)

    def kill_worker(name, sig, out, *args):
        p = _cli(out, *args, tmp_path=tmp_path)
        wait_for_steps(out, rng.randint(1, 20), p); time.sleep(rng.uniform(0, 0.5))
        os.kill(_worker_of(p.pid), sig)
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0 and 'restarting it (1 of 3)' in err, err[-3000:]
        results[name] = 0

    def corrupt(name, file, how, out):
        p = _cli(out, f'--steps={TARGET // 2}', '--checkpoint_every=1', tmp_path=tmp_path); p.communicate(timeout=300)
        f = find_checkpoint(out) / file
        b = bytearray(f.read_bytes())
        f.write_bytes(b[:len(b) // 2] if how == 'truncate' else b[:-9] + bytes([b[-9] ^ 0xFF]) + b[-8:])
        err_before = len(log)
        results[name] = TARGET // 2 - _finish(out, tmp_path, log)
        assert 'passed over corrupt checkpoint' in log[err_before] and file in log[err_before], log[err_before][-2000:]

    def concurrent(name, out):
        p = _cli(out, '--max_staleness=2', tmp_path=tmp_path, fault='slow')  # still running when the second one starts
        wait_for_steps(out, 1, p)
        q = _cli(out, tmp_path=tmp_path); _, err = q.communicate(timeout=120)
        assert q.returncode == 2 and f'in use by another run (pid {p.pid})' in err, err[-2000:]
        assert p.wait(timeout=300) == 0
        results[name] = 0

    def bad_reward(name, fault, message, out, *args):
        p = _cli(out, *args, tmp_path=tmp_path, fault=fault); t = time.monotonic()
        _, err = p.communicate(timeout=300)
        if fault.startswith('hang'):  # a hung batch fails after reward_timeout; the run goes on
            assert p.returncode == 0 and message in err, err[-3000:]; results[name] = 0; return
        assert p.returncode == 1 and message in err and time.monotonic() - t < 120, err[-3000:]
        last = _last_step(out)
        assert int(find_checkpoint(out).name.split('_')[1]) == last  # the last finished step is kept
        results[name] = last - _finish(out, tmp_path, log)

    faults = [
        lambda o: kill_trainer('SIGINT to the trainer', signal.SIGINT, o),
        lambda o: kill_trainer('SIGTERM to the trainer', signal.SIGTERM, o),
        lambda o: kill_trainer('SIGKILL to the trainer', signal.SIGKILL, o),
        lambda o: kill_worker('SIGKILL to the searcher process', signal.SIGKILL, o),
        # the trainer needs its data; a stop that lands while the worker scores waits reward_timeout + 30 s, not search_timeout
        lambda o: kill_worker('searcher process hangs (SIGSTOP)', signal.SIGSTOP, o, '--search_timeout=5', '--reward_timeout=5', '--max_staleness=4'),
        lambda o: corrupt('newest checkpoint: a flipped byte', 'policy.safetensors', 'flip', o),
        lambda o: corrupt('newest checkpoint: truncated', 'trainer.pt', 'truncate', o),
        lambda o: concurrent('a second run into a live folder', o),
        lambda o: bad_reward('reward hangs (every third batch)', 'hang:4', 'did not return within 2 s', o, '--reward_timeout=2', '--max_staleness=4'),
        lambda o: bad_reward('reward raises (from batch 7 on)', 'raise:6', 'reward batches failed', o),
        lambda o: bad_reward('reward returns only None (from batch 7 on)', 'none:6', 'returned None for every completion', o),
    ]
    chosen = [int(x) for x in os.environ['TBA_FAULTS'].split(',')] if os.environ.get('TBA_FAULTS') else range(len(faults))
    for i in chosen:
        out, inject = tmp_path / f'run{i}', faults[i]
        inject(out)
        assert steps_of(out) == list(range(1, TARGET + 1)), steps_of(out)  # every step once, in order: none lost, none twice
        assert find_checkpoint(out).name == f'step_{TARGET:06d}'
        left = [d for d in Path('/dev/shm').glob('tba_kit-weights-*-*') if (pid := int(d.name.split('-')[2])) in STARTED and not pid_alive(pid)]
        assert not left, left  # weight snapshots: removed on exit, or (after a SIGKILL) by the next run
    with capsys.disabled():
        print(f"\nfault injection (seed {seed}): faults survived {len(results)} of {len(chosen)} injected; "
              f"steps lost {sum(results.values())} in all")
        for k, v in results.items(): print(f"  {k}: survived, {v} step(s) lost")


# --- evaluations the third outside probe saw fail, mislead or score nonsense ---

def _copy_checkpoint(run:Path, to:Path, change) -> Path:
    "A copy of the run's newest checkpoint, changed by `change(folder)`, with its manifest written again to match"
    from tba_kit.checkpoints import _write_manifest
    ck = to / 'checkpoints' / find_checkpoint(run).name
    shutil.copytree(find_checkpoint(run), ck)
    (ck / 'manifest.json').unlink()
    change(ck)
    _write_manifest(ck, 1)
    return ck


@pytest.mark.slow
def test_tba_eval_refuses_what_it_cannot_score(tmp_path):
    """Before: non-finite weights scored 100%, a run's config.json scored the untrained model, a changed byte in the manifest
    or a corrupt config.json gave tracebacks naming no file, --out under a file and meaningless overrides were found late or never"""
    import asyncio, torch
    from safetensors.torch import load_file, save_file
    from test_loop import TINY
    from tba_kit.cli import evaluate_target
    from tba_kit.loop import run
    asyncio.run(run(task='t_vowels', steps=1, mode='sync', placement='inline', eval=False, out_dir=str(tmp_path / 'run'), **TINY))
    with pytest.raises(ValueError, match="saved config of a run with checkpoints: give its folder .* or add --untrained"):
        evaluate_target(str(tmp_path / 'run' / 'config.json'))
    assert evaluate_target(str(tmp_path / 'run' / 'config.json'), untrained=True)['checkpoint'] is None  # when asked for
    with pytest.raises(ValueError, match="'steps' means nothing to an evaluation"): evaluate_target(str(tmp_path / 'run'), overrides=['--steps=3'])
    (tmp_path / 'file').write_text('x')
    with pytest.raises(ValueError, match="--out: .* cannot be written"): evaluate_target(str(tmp_path / 'run'), out=str(tmp_path / 'file' / 'e.jsonl'))
    def nan(ck):
        w = load_file(ck / 'policy.safetensors')
        save_file({k: torch.full_like(v, float('nan')) for k, v in w.items()}, ck / 'policy.safetensors')
    with pytest.raises(ValueError, match=r"holds non-finite weights .* its run diverged"): evaluate_target(str(_copy_checkpoint(tmp_path / 'run', tmp_path / 'nan', nan)))
    bad = _copy_checkpoint(tmp_path / 'run', tmp_path / 'cfg', lambda ck: (ck / 'config.json').write_text('{"model": "ti'))
    with pytest.raises(ValueError, match=re.escape(f"{str(bad / 'config.json')!r} cannot be read")): evaluate_target(str(bad))
    flipped = _copy_checkpoint(tmp_path / 'run', tmp_path / 'flip', lambda ck: None)
    (flipped / 'manifest.json').write_text((flipped / 'manifest.json').read_text().replace('"sha256"', '"sha2560"', 1))
    for target in (flipped, flipped.parent.parent):
        with pytest.raises(ValueError, match="manifest.json cannot be read"): evaluate_target(str(target))
    assert evaluate_target(str(tmp_path / 'run'))['checkpoint'].endswith('step_000001')  # the run itself is fine


@pytest.mark.slow
def test_tba_eval_of_a_live_run_pins_its_checkpoint(tmp_path):
    "Before: 10 of 10 evaluations of a run that checkpoints every step, keeping 1, failed (the checkpoint was pruned before it was read)"
    from tba_kit.cli import evaluate_target
    out = tmp_path / 'live'
    p = tba_train(*TINY_CLI, '--mode=sync', '--steps=100000', '--checkpoint_every=1', '--keep_checkpoints=1', f'--out_dir={out}')
    try:
        wait_for_steps(out, 3, p)
        seen = [evaluate_target(str(out), limit=2)['checkpoint'] for _ in range(5)]
        assert p.poll() is None and len(set(seen)) > 1, seen  # the run went on checkpointing (and pruning) meanwhile
        assert not list((out / 'checkpoints').glob('.pin-*'))  # nothing left behind
    finally:
        p.send_signal(signal.SIGINT); p.communicate(timeout=120)


# --- runs that diverged trained on silently, or stopped blaming the rewards (the third outside probe) ---

@pytest.mark.parametrize('setting, said', [(dict(lr=10.), "one update took the weights' norm from"), (dict(weight_decay=1e6), "weight_decay 1000000.0"),
                                           (dict(lr=1e3, max_grad_norm=None), "max_grad_norm None"), (dict(objective='tb', gamma=1e-9), "gamma 1e-09"),
                                           (dict(objective='tb', log_z_lr=1e6), "log_z_lr 1000000.0")])
@pytest.mark.slow
def test_a_diverging_run_stops_naming_the_setting_and_keeps_its_last_checkpoint(tmp_path, setting, said):
    "Before: lr 10, gamma 1e-9, log_z_lr 1e6 trained on (exit 0); lr 1e3 without clipping and weight_decay 1e6 were refused a step later, blaming the rewards"
    import asyncio
    from test_loop import TINY
    from tba_kit.loop import run
    from tba_kit.trainer import Diverged
    out = tmp_path / 'run'
    with pytest.raises(Diverged, match='so training diverged') as e:
        asyncio.run(run(task='t_vowels', steps=20, mode='sync', placement='inline', eval=False, checkpoint_every=1, out_dir=str(out), **(TINY | setting)))
    assert said in str(e.value) and 'These weights are not checkpointed' in str(e.value), str(e.value)
    kept = sorted((out / 'checkpoints').glob('step_*'))
    done = max(r['train/step'] for r in map(json.loads, open(out / 'metrics.jsonl')) if 'train/step' in r) if kept else 0
    assert [k.name for k in kept][-1:] == ([f'step_{done:06d}'] if done else []) and (not kept or str(kept[-1]) in str(e.value))  # the last good step's, named


@pytest.mark.process
def test_a_diverging_run_exits_1_with_one_line(tmp_path):
    r = train(*TINY_CLI, '--mode=sync', '--lr=10', '--steps=30', f'--out_dir={tmp_path / "run"}')
    lines = [l for l in r.stderr.splitlines() if l.startswith('tba:')]
    assert r.returncode == 1 and len(lines) == 1 and 'so training diverged' in lines[0] and 'Traceback' not in r.stderr, r.stderr[-2000:]


@pytest.mark.slow
def test_vanishing_bf16_updates_are_named(tmp_path, caplog):
    "Before: precision bf16 with lr 1e-5 left 5 of 20 weight tensors unchanged, silently"
    import asyncio
    from test_loop import TINY
    from tba_kit.loop import run
    with caplog.at_level('WARNING', logger='tba_kit'):
        asyncio.run(run(task='t_vowels', steps=6, mode='sync', placement='inline', eval=False, out_dir=str(tmp_path), **(TINY | dict(precision='bf16', lr=1e-7))))
    said = [r.message for r in caplog.records if 'precision bf16' in r.message]
    assert len(said) == 1 and 'did not change in the first update' in said[0], said


@pytest.mark.process
def test_a_searcher_killed_again_while_it_restarts_is_restarted_again(tmp_path):
    "Before: the restart's own start ran outside the retry loop, so a second death stopped the run with restarts unused"
    p = _cli(tmp_path / 'run', tmp_path=tmp_path)
    wait_for_steps(tmp_path / 'run', 3, p)
    first = _worker_of(p.pid)
    os.kill(first, signal.SIGKILL)
    for _ in range(600):  # the restarted worker, killed while it loads
        if (second := _worker_of(p.pid)) != first: break
        time.sleep(0.01)
    os.kill(second, signal.SIGKILL)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0 and 'restarting it (2 of 3)' in err, err[-3000:]
    assert steps_of(tmp_path / 'run') == list(range(1, TARGET + 1))


@pytest.mark.process
def test_searches_that_only_repeat_are_named_within_seconds(tmp_path):
    "Before: near-greedy sampling with dedup on made every search a duplicate, and pre-filling waited wait_timeout (600 s) before asking 'are the searchers alive?'"
    t = time.monotonic()
    r = train(*TINY_CLI, '--task_args={n_train: 4, n_test: 4}', '--temperature=1e-6', '--top_p=1e-9', '--dedup=true', f'--out_dir={tmp_path / "run"}')
    assert r.returncode == 1 and 'brought only completions the replay buffer already holds' in r.stderr and 'set dedup: false' in r.stderr, r.stderr[-2000:]
    assert time.monotonic() - t < 150  # model loads and searches included; the stall itself is named after 5 searches


@pytest.mark.process
def test_a_stopped_searcher_in_sync_mode_is_restarted(tmp_path):
    "Before: in sync mode the round's own timeout fired first and the run ended with 'tba: error: TimeoutError: ' (no message)"
    p = _cli(tmp_path / 'run', '--mode=sync', '--search_timeout=5', tmp_path=tmp_path)
    wait_for_steps(tmp_path / 'run', 3, p)
    os.kill(_worker_of(p.pid), signal.SIGSTOP)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0 and 'did not answer search within 5 s' in err and 'restarting it (1 of 3)' in err, err[-3000:]


@pytest.mark.process
def test_prompts_longer_than_the_model_context_are_refused(tmp_path, monkeypatch):
    "Before: a training or held-out prompt longer than the model's context was accepted, with only a transformers warning"
    import asyncio
    from test_loop import TINY
    from tba_kit.loop import run
    (tmp_path / 'long_task.py').write_text(
        "from tba_kit.tasks import PromptTask\nLONG = 'word ' * 250  # 1,250 byte tokens: the tiny model's context is 1,024\n"
        "zero = lambda prompts, completions, **kw: [0.] * len(completions)\n"
        "def train(**kw): return PromptTask(['Say a word', LONG], zero, test=['Say a word'])\n"
        "def test(**kw): return PromptTask(['Say a word'], zero, test=['Say a word', LONG])\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for split in ('train', 'test'):
        with pytest.raises(ValueError, match=f"config field 'task': {split} prompt '{split}-1' has 12[0-9][0-9] tokens.*context of 1024 tokens"):
            asyncio.run(run(task=f'long_task:{split}', steps=1, mode='sync', placement='inline', out_dir=str(tmp_path / split), **TINY))


@pytest.mark.slow
def test_a_sync_run_interrupted_during_a_search_resumes_exactly(tmp_path, monkeypatch):
    """Before: SIGINT in sync mode checkpointed after the next step's prompts were drawn (and its sampling begun), so the resumed
    run differed from the straight one from that step on (max difference 3e-3)"""
    import asyncio, torch
    from safetensors.torch import load_file
    from test_loop import TINY
    import tba_kit.tasks as T
    from tba_kit.loop import run
    from tba_kit.tasks import PromptTask, completion_text
    at = {'calls': 0, 'cancel': None, 'task': None}

    async def reward(prompts, completions, **kw):
        at['calls'] += 1
        if at['calls'] == at['cancel']: at['task'].cancel(); await asyncio.sleep(30)  # as SIGINT does, during the third step's search
        return [sum(ch in 'aeiou' for ch in completion_text(c)) / max(len(completion_text(c)), 1) for c in completions]
    T.TASKS['t_interrupted'] = (lambda **kw: PromptTask([f'Say word {i}' for i in range(6)], reward, test=['Say a word']))
    kw = dict(TINY, task='t_interrupted', mode='sync', placement='inline', eval=False, seed=3)
    asyncio.run(run(steps=4, out_dir=str(tmp_path / 'straight'), **kw))

    async def interrupted():
        at.update(calls=0, cancel=3, task=asyncio.current_task())
        await run(steps=4, out_dir=str(tmp_path / 'split'), **kw)
    with pytest.raises(asyncio.CancelledError): asyncio.run(interrupted())
    assert find_checkpoint(tmp_path / 'split').name == 'step_000002'
    at['cancel'] = None
    asyncio.run(run(steps=4, out_dir=str(tmp_path / 'split'), resume=tmp_path / 'split', **kw))
    a, b = (load_file(find_checkpoint(tmp_path / r) / 'policy.safetensors') for r in ('straight', 'split'))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), max(float((a[k] - b[k]).abs().max()) for k in a)


def test_a_full_disk_while_checkpointing_is_one_line_and_keeps_the_checkpoints_before(tmp_path, monkeypatch):
    "Before: a disk filling mid-run ended 2 of 4 runs in tracebacks (safetensors' SafetensorError, torch's 'enforce fail ... unexpected pos')"
    import asyncio
    import safetensors.torch as st
    from test_loop import TINY
    from tba_kit import checkpoints as C
    from tba_kit.loop import run
    asyncio.run(run(task='t_vowels', steps=2, mode='sync', placement='inline', eval=False, out_dir=str(tmp_path / 'run'), **TINY))
    before = sorted(p.name for p in (tmp_path / 'run' / 'checkpoints').iterdir())
    def full(*a, **k):  # the disk fills while the checkpoint is written (a full disk at start is refused at start)
        monkeypatch.setattr(C.shutil, 'disk_usage', lambda p: type('Usage', (), {'free': 4096})())
        raise RuntimeError('enforce fail at inline_container.cc:778 . unexpected pos 1216 vs 1114')  # torch's words for it
    monkeypatch.setattr(st, 'save_model', full)
    with pytest.raises(OSError, match="could not be written: the disk holding .* is full .* unexpected pos"):
        asyncio.run(run(task='t_vowels', steps=3, mode='sync', placement='inline', eval=False, out_dir=str(tmp_path / 'run'), resume=tmp_path / 'run', **TINY))
    assert sorted(p.name for p in (tmp_path / 'run' / 'checkpoints').iterdir()) == before  # no half-written folder, nothing pruned
    assert find_checkpoint(tmp_path / 'run').name == 'step_000002'


@pytest.mark.process
def test_a_sigkilled_run_leaves_no_weights_on_the_ram_disk(tmp_path):
    "Before: after SIGKILL the run's /dev/shm weights folder (gigabytes with a real model) stayed until the next tba run"
    p = _cli(tmp_path / 'run', '--steps=100000', tmp_path=tmp_path)
    wait_for_steps(tmp_path / 'run', 3, p)
    assert _shm_left(p.pid)  # the run's snapshots, while it lives
    p.kill(); p.communicate(timeout=60)
    for _ in range(100):
        if not _shm_left(p.pid): break
        time.sleep(0.1)
    assert not _shm_left(p.pid)  # removed by its searcher process, which ends with it


@pytest.mark.cluster
@pytest.mark.process
def test_a_sigkilled_ray_driver_leaves_no_ray_process(tmp_path):
    "Before: after SIGKILL of a driver that had started a local cluster, ray::DashboardAgent and ray::RuntimeEnvAgent were alive 30 s later"
    pytest.importorskip('ray')
    psutil = pytest.importorskip('psutil')
    driver = subprocess.Popen([sys.executable, '-c', "from tba_kit.ray_searcher import connect; connect(); print('up', flush=True); import time; time.sleep(600)"],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert driver.stdout.readline().strip() == 'up'
        time.sleep(3)  # the raylet starts its agents
        ray_procs = [c for c in psutil.Process(driver.pid).children(recursive=True) if c.cmdline()[1:2] != ['-c']]  # not the reaper (python -c)
        assert any('DashboardAgent' in ' '.join(c.cmdline()) for c in ray_procs), [c.cmdline()[:1] for c in ray_procs]
    finally: driver.kill(); driver.wait()
    gone, alive = psutil.wait_procs(ray_procs, timeout=20)
    assert not alive, [(c.pid, ' '.join(c.cmdline())[:80]) for c in alive]


# --- what a user's own reward, shell and typing did to a run (the fourth outside probe) ---

SANDBOX_TASK = '''
import os
from pathlib import Path
from tba_kit.tasks import PromptTask, completion_text
calls = [0]

def reward(prompts, completions, **kw):
    "Vowel share, scored the way a code sandbox works: in a folder of its own (os.chdir); EXIT_AT=n ends the process at the n-th call"
    calls[0] += 1
    if calls[0] == int(os.environ.get('EXIT_AT', 0)): os._exit(0)  # a library that exits, as some do
    os.chdir(Path(os.environ['SANDBOX']).resolve())
    return [sum(ch in 'aeiou' for ch in completion_text(c)) / max(len(completion_text(c)), 1) for c in completions]

def make(**kw): return PromptTask([f'Say word {i}' for i in range(12)], reward, test=['Say a word'], name='sandboxed')
'''

HERE_CLI = [str(ROOT / TINY_CLI[0]), *TINY_CLI[1:]]  # run from another working folder


def _here(tmp_path, *args, env=None, timeout=300) -> subprocess.CompletedProcess:
    "`tba train` (the console script's way: the working folder is not on sys.path) started in tmp_path, beside the sandboxed task's file"
    (tmp_path / 'sandbox_task.py').write_text(SANDBOX_TASK); (tmp_path / 'sandbox').mkdir(exist_ok=True)
    code = 'import sys; sys.path.remove(sys.path[0]); from tba_kit.cli import main; sys.exit(main())'  # as the `tba` script: its own folder first, not the working one
    return subprocess.run([sys.executable, '-c', code, 'train', *args], cwd=tmp_path, capture_output=True, text=True, timeout=timeout,
                          env=os.environ | {'SANDBOX': str(tmp_path / 'sandbox')} | (env or {}))


@pytest.mark.slow
@pytest.mark.process
@pytest.mark.parametrize('placement, task', [('inline', './sandbox_task.py:make'), ('process', 'sandbox_task:make')])
def test_a_reward_that_changes_the_working_folder_moves_nothing(tmp_path, placement, task):
    """Before: a reward calling os.chdir ended the run with rc 2 and a bare 'No such file ... timeline.jsonl', its checkpoint went to the
    sandbox, and its resume found none; a task named by its file's path got Python's relative-import error, and a task module in the
    working folder was not found by `tba`. Now paths are absolute from the start, a file path is loaded, the working folder is searched"""
    r = _here(tmp_path, *HERE_CLI, f'--task={task}', '--task_args={}', f'--placement={placement}', '--steps=3', '--out_dir=runs/x')
    assert r.returncode == 0, r.stderr[-3000:]
    out = tmp_path / 'runs' / 'x'
    assert find_checkpoint(out).name == 'step_000003' and steps_of(out) == [1, 2, 3]
    assert not list((tmp_path / 'sandbox').rglob('*'))  # nothing of the run's in the reward's folder
    r = _here(tmp_path, '--resume', 'runs/x', '--steps=4', '--no-progress')
    assert r.returncode == 0 and steps_of(out) == [1, 2, 3, 4], r.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.process
def test_a_reward_that_ends_the_process_is_named_by_the_next_resume(tmp_path):
    "Before: a reward calling os._exit(0) ended the run with rc 0 and no word, and nothing afterwards said where it had ended"
    r = _here(tmp_path, *HERE_CLI, '--task=sandbox_task:make', '--task_args={}', '--placement=inline', '--steps=100000',
              '--checkpoint_every=1', '--out_dir=run', env={'EXIT_AT': '12'})
    assert r.returncode == 0 and (tmp_path / 'run' / 'reward_running.json').exists(), r.stderr[-3000:]  # os._exit(0): nothing can say it then
    done = max(steps_of(tmp_path / 'run'), default=0)
    r = _here(tmp_path, '--resume', 'run', f'--steps={done + 2}', '--no-progress')
    said = f"ended inside the reward function 'reward' after step {done}, without a message"
    assert r.returncode == 0 and said in r.stderr, r.stderr[-3000:]
    assert not (tmp_path / 'run' / 'reward_running.json').exists()  # said once


@pytest.mark.slow
@pytest.mark.process
def test_a_reward_that_ends_its_worker_costs_a_restart_not_the_run(tmp_path):
    """Before: with worker processes the reward still ran in the trainer's process, and os._exit(0) there ended the run after step 2
    with rc 0 and no word. Now each worker scores with its own copy of the task: the reward ends the worker, the searcher names the
    reward and replaces the worker, its prompts are searched again, and the run trains on; with no restarts left the run stops naming it"""
    r = _here(tmp_path, *HERE_CLI, '--task=sandbox_task:make', '--task_args={}', '--placement=process', '--steps=4', '--searcher_restarts=50',
              '--out_dir=run', env={'EXIT_AT': '2'})  # each worker's second reward call ends it
    assert r.returncode == 0 and steps_of(tmp_path / 'run') == [1, 2, 3, 4], r.stderr[-3000:]
    assert "process died (exit code 0) during search, inside its reward function 'reward': restarting it (1 of 50)" in r.stderr, r.stderr[-3000:]
    assert not (tmp_path / 'run' / 'reward_running.json').exists()  # the trainer's process never ran the reward
    r = _here(tmp_path, *HERE_CLI, '--task=sandbox_task:make', '--task_args={}', '--placement=process', '--steps=100000', '--searcher_restarts=0',
              '--out_dir=run0', env={'EXIT_AT': '2'})
    said = "process died (exit code 0) during search, inside its reward function 'reward'; it was restarted 0 times already (max_restarts): giving up"
    assert r.returncode != 0 and said in r.stderr, r.stderr[-3000:]


@pytest.mark.process
def test_a_closed_terminal_checkpoints_as_sigterm_does(tmp_path):
    "Before: SIGHUP (the terminal closed, ssh dropped) ended the run within 0.1 s with no message and no checkpoint"
    out = tmp_path / 'run'
    p = tba_train(*TINY_CLI, '--steps=100000', f'--out_dir={out}')
    try:
        wait_for_steps(out, 2, p)
        p.send_signal(signal.SIGHUP)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None: p.kill()
    assert p.returncode == 130 and 'SIGHUP: finishing the current step and writing a checkpoint' in err, err[-3000:]
    assert find_checkpoint(out).name == f'step_{max(steps_of(out)):06d}'
    out = tmp_path / 'nohup'  # started by nohup (SIGHUP ignored): it outlives its terminal
    p = subprocess.Popen([sys.executable, '-m', 'tba_kit.cli', 'train', *TINY_CLI, '--steps=100000', f'--out_dir={out}'], cwd=ROOT, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    try:
        wait_for_steps(out, 2, p)
        p.send_signal(signal.SIGHUP)
        wait_for_steps(out, max(steps_of(out)) + 2, p)  # still training
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None: p.kill()
    assert p.returncode == 130 and 'SIGHUP' not in err and 'SIGTERM: finishing' in err, err[-3000:]


@pytest.mark.process
def test_what_a_user_types_by_mistake_is_named_with_the_fix(tmp_path):
    """Before: a resume to a step already trained loaded everything and said 'done', a run folder given as the config raised
    IsADirectoryError, `--model=Tiny` spent ~50 s on hub retries, a checkpoint with nan weights was refused only at its first step"""
    out = tmp_path / 'run'
    assert train(*TINY_CLI, '--steps=2', f'--out_dir={out}').returncode == 0
    files = {p: p.read_bytes() for p in out.rglob('*') if p.is_file() and p.name != '.lock'}
    for steps in (2, 1):
        r = train('--resume', str(out), f'--steps={steps}')
        assert r.returncode == 2 and f"is at step 2, and steps is {steps}, so nothing would be trained" in r.stderr, r.stderr[-2000:]
    unfinished = tmp_path / 'unfinished'  # stopped in its last evaluation: at step == steps, without its summary
    shutil.copytree(out, unfinished); (unfinished / 'summary.json').unlink()
    r = train('--resume', str(unfinished), '--steps=2', '--no-progress')
    assert r.returncode == 0 and (unfinished / 'summary.json').exists() and steps_of(unfinished) == [1, 2], r.stderr[-2000:]
    r = train(str(out))
    assert r.returncode == 2 and f"is a folder, not a config file: to continue the run in it, tba train --resume {out}" in r.stderr, r.stderr[-2000:]
    assert {p: p.read_bytes() for p in out.rglob('*') if p.is_file() and p.name != '.lock'} == files  # nothing written
    t = time.monotonic()
    r = train(*TINY_CLI, '--model=Tiny', f'--out_dir={tmp_path / "typo"}', timeout=60)
    assert r.returncode == 2 and "did you mean 'tiny'?" in r.stderr and time.monotonic() - t < 30, r.stderr[-2000:]
    from safetensors.torch import load_file, save_file
    import torch
    def nan(ck):
        w = load_file(ck / 'policy.safetensors')
        save_file({k: torch.full_like(v, float('nan')) for k, v in w.items()}, ck / 'policy.safetensors')
    bad = _copy_checkpoint(out, tmp_path / 'nan', nan)
    shutil.copy(out / 'config.json', bad.parent.parent)
    r = train('--resume', str(bad.parent.parent), '--steps=4')
    assert r.returncode == 2 and 'holds non-finite weights' in r.stderr and not (bad.parent.parent / 'metrics.jsonl').exists(), r.stderr[-2000:]


def test_a_full_disk_at_start_names_the_folder_and_its_free_space(tmp_path, monkeypatch):
    "Before: a disk already full at start failed with '[Errno 28] No space left on device', naming no path"
    import asyncio
    import tba_kit.runtime as R, tba_kit.loop as L
    monkeypatch.setattr(R.shutil, 'disk_usage', lambda p: type('Usage', (), {'free': 4096})())
    with pytest.raises(OSError, match=rf"config field 'out_dir': the disk holding {re.escape(repr(str(tmp_path)))} is full \(0.0 MiB free"):
        asyncio.run(L.run(dict(model='tiny', task_args={'n_train': 40, 'n_test': 4}, k=4, out_dir=str(tmp_path / 'r')), progress=False))


def test_paths_in_a_config_mean_what_they_mean_in_a_shell(tmp_path, monkeypatch):
    "Before: out_dir '~/runs/x' made a folder named '~' in the working folder, and the run's last line read as the home folder"
    from tba_kit.config import Config
    monkeypatch.setenv('HOME', str(tmp_path))
    assert Config(out_dir='~/runs/x').out_dir == str(tmp_path / 'runs' / 'x')
    monkeypatch.chdir(tmp_path)
    c = Config(out_dir='runs/y', model='./m', task='tasks/mine.py:make').absolute_paths()
    (tmp_path / 'm').mkdir()
    assert (c.out_dir, c.model, c.task) == (str(tmp_path / 'runs' / 'y'), './m', f"{tmp_path / 'tasks' / 'mine.py'}:make")  # no folder m yet: a hub name
    assert Config(model='./m').absolute_paths().model == str(tmp_path / 'm')


@pytest.mark.slow
def test_a_run_that_cannot_fit_in_memory_is_refused_before_any_model_loads(tmp_path, monkeypatch):
    """Before: nothing estimated a run's memory before loading it. Now a run whose lower bound passes the limit is refused (12 fp32
    searchers of SmolLM2 in 6 GiB), and a search holds batch_size rows of a prompt at a time, not all k (06f_generation)"""
    import asyncio
    import tba_kit.build as B, tba_kit.loop as L
    from tba_kit.config import Config
    monkeypatch.setattr(B, 'make_policy', lambda cfg: pytest.fail('a model was loaded'))
    monkeypatch.setattr(B, 'visible_memory', lambda: (6 * 2 ** 30, "a test's limit"))
    B.check_memory(Config.load(ROOT / 'configs' / 'quickstart.yaml').resolve_precision()[0])  # the main job fits in 6 GiB (about 2.5 GiB)
    with pytest.raises(ValueError, match=r"config field 'model': this run needs about 8\.\d GiB or more \(the searchers' copies \(12\) 6\.0, the trainer "
                                         r"\(weights, gradients, AdamW\) 2\.0.* 135M parameters\), more than the 6\.0 GiB a test's limit allows: lower searchers"):
        asyncio.run(L.run(ROOT / 'configs' / 'quickstart.yaml', progress=False, searchers=12, searcher_dtype='float32', out_dir=str(tmp_path / 'r')))
    assert not (tmp_path / 'r').exists()


def test_checkpoints_with_trainer_ranks_are_on_unless_turned_off(monkeypatch, capsys):
    "Before: an explicit checkpoint_every 0 with trainer ranks was replaced by 25 without a word of it being the user's; now null means 25, 0 is kept and its cost said"
    import tba_kit.build as B
    from tba_kit.config import Config
    monkeypatch.setattr(B, 'start_ranks', lambda cfg, *a, **k: 'the ranks')
    kw = dict(model=None, objective=None, kl=None, pad_id=0)
    assert B.make_trainer(Config(trainer_procs=2), **kw)[0].checkpoint_every == B.RANKS_CHECKPOINT_EVERY == 25
    assert B.make_trainer(Config(trainer_procs=2, checkpoint_every=0), **kw)[0].checkpoint_every == 0
    assert "trainer ranks with checkpoint_every 0: a rank's fault loses every step" in capsys.readouterr().err
    assert B.make_trainer(Config(trainer_procs=2, checkpoint_every=7), **kw)[0].checkpoint_every == 7


def test_a_moved_model_folder_or_task_file_is_accepted_on_resume(tmp_path):
    "Paths are saved absolute: a model folder or task file that moved is accepted in its new place (same name), a different one is not"
    from tba_kit.checkpoints import _moved
    (tmp_path / 'new' / 'model').mkdir(parents=True); (tmp_path / 'new' / 't.py').write_text('')
    gone = str(tmp_path / 'old' / 'model')
    assert _moved(gone, str(tmp_path / 'new' / 'model'))
    assert _moved(f"{tmp_path / 'old' / 't.py'}:make", f"{tmp_path / 'new' / 't.py'}:make")
    assert not _moved(f"{tmp_path / 'old' / 't.py'}:make", f"{tmp_path / 'new' / 't.py'}:other")  # another factory
    assert not _moved(str(tmp_path / 'new' / 'model'), str(tmp_path / 'new' / 't.py'))  # the saved one still exists: a change
    assert not _moved('tiny', str(tmp_path / 'new' / 'model'))
