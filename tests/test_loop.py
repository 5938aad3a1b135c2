"The loop across process boundaries: exact resume, reward faults, timeouts, dead workers, cancellation without orphans."
import asyncio, json, math, os, signal, subprocess, sys, time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import tba_kit.tasks as T
from tba_kit.checkpoints import find_checkpoint
from tba_kit.loop import run
from tba_kit.searchers import SearcherError
from tba_kit.workers import ProcessSearcher
from tba_kit.tasks import PromptTask, RewardError, completion_text
from conftest import live_children


def vowels(prompts, completions, **kw):
    return [sum(ch in 'aeiou' for ch in completion_text(c)) / max(len(completion_text(c)), 1) for c in completions]


def flaky(prompts, completions, **kw):
    "Fails on every third call"
    flaky.calls += 1
    if flaky.calls % 3 == 0: raise RuntimeError('scorer backend unavailable')
    return vowels(prompts, completions)
flaky.calls = 0


def broken(prompts, completions, **kw): return [float('nan')] * len(completions)


for name, fn in [('vowels', vowels), ('flaky', flaky), ('broken', broken)]:
    T.TASKS[f't_{name}'] = (lambda fn=fn, name=name: lambda **kw: PromptTask([f'Say word {i}' for i in range(6)], fn,
                                                                               test=['Say a word'], name=name))()

TINY = dict(model='tiny', k=4, prompts_per_step=2, search_prompts=2, max_new_tokens=6, eval_max_new_tokens=6, prefill=8,
            precision='fp32', lr=1e-3, progress=False)


def children() -> set:
    "PIDs of this process's live searcher workers (spawned children other than multiprocessing's resource tracker)"
    return live_children(lambda cmd: b'spawn_main' in cmd)


@pytest.mark.parametrize('placement', ['inline', pytest.param('process', marks=pytest.mark.process)])
def test_resume_continues_exactly(tmp_path, placement):
    """4 steps straight == 2 steps, then --resume for 2 more (sync mode: deterministic given the restored RNG states; a searcher
    process seeds each search from its count of searches, which the checkpoint keeps)"""
    kw = dict(TINY, task='t_vowels', mode='sync', placement=placement, eval=False, seed=3)
    asyncio.run(run(steps=4, out_dir=str(tmp_path / 'straight'), **kw))
    asyncio.run(run(steps=2, out_dir=str(tmp_path / 'split'), **kw))
    asyncio.run(run(steps=4, out_dir=str(tmp_path / 'split'), resume=tmp_path / 'split', **kw))
    a = load_file(find_checkpoint(tmp_path / 'straight') / 'policy.safetensors')
    b = load_file(find_checkpoint(tmp_path / 'split') / 'policy.safetensors')
    assert a.keys() == b.keys()
    for k in a: assert torch.equal(a[k], b[k]), k
    assert find_checkpoint(tmp_path / 'split').name == 'step_000004'
    rows = [json.loads(l) for l in open(tmp_path / 'split' / 'metrics.jsonl')]
    assert [r['train/step'] for r in rows] == [1, 2, 3, 4]
    for key in ('time/seconds', 'time/train_seconds'):  # the clocks go on after a resume
        assert [r[key] for r in rows] == sorted(r[key] for r in rows), key
    spans = [json.loads(l) for l in open(tmp_path / 'split' / 'timeline.jsonl')]
    assert [x['step'] for x in spans if x['kind'] == 'train'] == [1, 2, 3, 4]
    starts = [x['start'] for x in spans if x['kind'] == 'train']
    assert starts == sorted(starts)


@pytest.mark.process
def test_async_resume_and_process_searchers(tmp_path):
    """Async run with two searcher processes, checkpoint, resume; no process is left behind. The searchers anneal their
    temperature by the version of their weights: 1.5 at version 0, 1.0 from version 2, also after the resume"""
    before = children()
    kw = dict(TINY, task='t_vowels', searchers=2, placement='process', eval=False, temperature=1.5, temperature_final=1., temperature_steps=2,
              logprob_temperature=1., max_staleness=0)  # each step trains on completions of the newest weights: searches finish between steps
    s = asyncio.run(run(steps=2, out_dir=str(tmp_path / 'r'), **kw))
    s = asyncio.run(run(steps=4, out_dir=str(tmp_path / 'r'), resume=tmp_path / 'r', **kw))
    assert s.steps == 4
    rows = [json.loads(l) for l in open(tmp_path / 'r' / 'metrics.jsonl')]
    assert [r['train/step'] for r in rows] == [1, 2, 3, 4]
    assert all(r['sync/seconds'] > 0 for r in rows) and any('search/tokens_per_s' in r for r in rows)
    temps = [r.get('search/temperature') for r in rows]
    assert 1.25 < temps[0] <= 1.5 and 1.25 <= temps[1] < 1.5, temps  # version 0's searches (a version-1 one may finish first), then version 1's
    assert temps[2:] == [1., 1.], temps  # the resumed searchers start on version 2's weights
    assert children() <= before


@pytest.mark.slow
def test_lr_schedule_follows_the_clock_of_a_time_limited_run(tmp_path):
    """lr_schedule_by: time runs a 1000-step cosine over the 6 s of time_limit: the run stops after far fewer steps with
    the rate near 0, and each step's rate is the cosine at the share of the minutes spent when it started"""
    lr, limit = TINY['lr'], 0.1 * 60
    asyncio.run(run(task='t_vowels', steps=1000, time_limit=0.1, lr_schedule='cosine', lr_schedule_by='time', mode='sync',
                    placement='inline', eval=False, out_dir=str(tmp_path), **TINY))
    rows = [json.loads(l) for l in open(tmp_path / 'metrics.jsonl')]
    assert 5 < len(rows) < 1000, len(rows)
    cosine = lambda t: lr * 0.5 * (1 + math.cos(math.pi * min(t / limit, 1.)))
    for before, row in zip(rows, rows[1:]):  # the step started between the previous row's clock and its own
        assert cosine(row['time/train_seconds']) - 1e-9 <= row['train/lr'] <= cosine(before['time/train_seconds']) + 1e-9, (before, row)
    assert rows[0]['train/lr'] > 0.9 * lr and rows[-1]['train/lr'] < 0.2 * lr, [r['train/lr'] for r in rows]

def test_reward_failures_are_counted_and_the_run_continues(tmp_path, caplog):
    s = asyncio.run(run(task='t_flaky', steps=3, mode='sync', placement='inline', eval=False, out_dir=str(tmp_path), **{k: v for k, v in TINY.items() if k != 'progress'}, progress=False))
    rows = [json.loads(l) for l in open(tmp_path / 'metrics.jsonl')]
    assert s.steps == 3 and rows[-1]['reward/failed_batches'] >= 1
    assert 'scorer backend unavailable' in caplog.text  # the first traceback is reported, as a warning of logger 'tba_kit'


def test_run_stops_when_most_rewards_fail(tmp_path):
    with pytest.raises(RewardError, match='reward batches failed'):
        asyncio.run(run(task='t_broken', steps=3, placement='inline', eval=False, out_dir=str(tmp_path), **TINY))


@pytest.mark.process
def test_cancellation_stops_searcher_processes(tmp_path):
    "Cancelling the run (what Ctrl-C does) stops the worker processes before the task finishes"
    before = children()
    async def main():
        task = asyncio.create_task(run(task='t_vowels', steps=1000, searchers=2, placement='process', eval=False,
                                       out_dir=str(tmp_path), **TINY))
        for _ in range(600):  # until the searchers are up and training runs
            await asyncio.sleep(0.1)
            if (tmp_path / 'metrics.jsonl').exists(): break
        assert len(children() - before) == 2
        task.cancel()
        with pytest.raises(asyncio.CancelledError): await task
    asyncio.run(main())
    assert children() <= before
    rows = [json.loads(l) for l in open(tmp_path / 'metrics.jsonl')]  # a cancelled run (a notebook cell) keeps its work
    ck = find_checkpoint(tmp_path)
    assert int(ck.name.split('_')[1]) == rows[-1]['train/step'] and (ck / 'buffer.pt').exists()


@pytest.mark.process
def test_searcher_timeout_and_dead_worker_fail_loudly():
    "A worker that cannot start fails at once; one that dies with no restarts left fails the search"
    async def main():
        s = ProcessSearcher('tiny', reward=vowels, tiny=dict(seed=0), start_timeout=0.05)
        with pytest.raises(SearcherError, match='did not answer start within'): await s.start()
        assert s.proc is None
        s = await ProcessSearcher('tiny', reward=vowels, tiny=dict(seed=0), max_new_tokens=4, max_restarts=0).start()
        os.kill(s.proc.pid, signal.SIGKILL)
        with pytest.raises(SearcherError, match='died|went away'):
            await s.search(T.PromptTask(['hi'], vowels).prompts(), k=2)
        await s.aclose()
    asyncio.run(main())


def test_config_errors_come_before_any_model_loads(monkeypatch):
    import tba_kit.build as B
    monkeypatch.setattr(B, 'make_policy', lambda cfg: pytest.fail('a model was loaded'))
    with pytest.raises(ValueError, match="did you mean 'p_recent'"): asyncio.run(run(model='tiny', p_recnt=0.5))
    with pytest.raises(ValueError, match='needs k >= 2'): asyncio.run(run(model='tiny', k=1))
    with pytest.raises(ValueError, match="'device'"): asyncio.run(run(model='tiny', device='gpu'))
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="config field 'device'.*use device: cpu"): asyncio.run(run(model='tiny', device='cuda'))


def test_weight_file_being_installed_is_not_deleted(tmp_path):
    "A search that took a weight snapshot keeps it alive until it is done, even if newer weights are published meanwhile"
    from tba_kit.models import tiny_model
    from tba_kit.searchers import HFSearcher
    from tba_kit.weights import FileChannel
    async def main():
        model, tok = tiny_model()
        s, channel = HFSearcher(model, tok, reward=vowels, max_new_tokens=4), FileChannel(str(tmp_path))
        h1 = channel.publish(model, 1, dtype=torch.float32)
        await s.load_weights(h1)
        s._pending.take()  # a search has started installing it
        h2 = channel.publish(model, 2, dtype=torch.float32)
        await s.load_weights(h2)
        assert Path(h1.path).exists() and Path(h2.path).exists()
        s._pending.done()
        assert Path(h1.path).exists() and Path(h2.path).exists()  # h1 is what the searcher runs on now
        s._pending.take(); s._pending.done()  # the next search installs h2
        assert not Path(h1.path).exists() and Path(h2.path).exists()
        channel.close()
    asyncio.run(main())


@pytest.mark.slow
def test_tba_eval_reads_a_run_checkpoint(tmp_path):
    from tba_kit.cli import evaluate_target
    asyncio.run(run(task='t_vowels', steps=1, mode='sync', placement='inline', eval=False, out_dir=str(tmp_path), **TINY))
    res = evaluate_target(str(tmp_path))
    assert res['checkpoint'].endswith('step_000001') and 0 <= res['eval/reward'] <= 1 and 'eval/accuracy' in res
    out = tmp_path / 'evals' / 'short.jsonl'  # overrides apply to the run's saved config; --out keeps every problem
    short = evaluate_target(str(tmp_path), overrides=['--eval_max_new_tokens=1'], out=str(out))
    rows = [json.loads(l) for l in out.read_text().splitlines()]
    assert rows == short['examples'] and {'prompt', 'completion', 'correct'} <= set(rows[0])
    assert 0 < len(rows[0]['completion']) < len(res['examples'][0]['completion'])  # greedy: the same answer, cut to one token
    with pytest.raises(ValueError, match="config field 'model'.*holds weights of 'tiny'"):
        evaluate_target(str(tmp_path), overrides=['--model=smollm2-135m-instruct'])


def test_lora_policy_is_published_merged_under_base_names():
    "A LoRA policy's published weights are the merged weights with the base model's parameter names"
    peft = pytest.importorskip('peft')
    from tba_kit.models import tiny_model
    from tba_kit.weights import install_state, policy_state
    base, _ = tiny_model(seed=0)
    names = {n for n, _ in base.named_parameters()}
    lora = peft.get_peft_model(tiny_model(seed=0)[0], peft.LoraConfig(r=4, target_modules=['q_proj', 'v_proj'], init_lora_weights=False))
    state = policy_state(lora, torch.float32)
    assert set(state) == names
    searcher_model, _ = tiny_model(seed=0)
    install_state(searcher_model, state)
    x = torch.tensor([[1, 2, 3, 4]])
    assert torch.allclose(searcher_model(x).logits, lora(x).logits, atol=1e-5)
    assert not torch.allclose(searcher_model(x).logits, base(x).logits, atol=1e-3)  # the adapters changed something


@pytest.mark.slow
@pytest.mark.process
def test_lora_and_trainer_side_reference_in_full_runs(tmp_path):
    "A LoRA policy trains through the whole loop (process searcher gets merged weights); the trainer can compute the reference"
    pytest.importorskip('peft')
    from tba_kit.models import tiny_model
    folder = tmp_path / 'tiny'
    m, tok = tiny_model(seed=0)
    m.save_pretrained(folder); tok.save_pretrained(folder)
    kw = {k: v for k, v in TINY.items() if k not in ('model', 'progress')}
    s = asyncio.run(run(dict(kw, model=str(folder), lora=dict(r=4, target_modules=['q_proj', 'v_proj']), task='t_vowels', steps=2,
                             placement='process', eval=False, out_dir=str(tmp_path / 'lora')), progress=False))
    assert s.steps == 2
    policy = load_file(find_checkpoint(tmp_path / 'lora') / 'policy.safetensors')
    assert any('lora_' in k for k in policy)  # the adapters are what is checkpointed
    s = asyncio.run(run(dict(kw, model='tiny', task='t_vowels', steps=2, ref_on='trainer', placement='inline', eval=False,
                             out_dir=str(tmp_path / 'ref')), progress=False))
    rows = [r for r in map(json.loads, open(tmp_path / 'ref' / 'metrics.jsonl')) if 'train/step' in r]
    assert len(rows) == 2 and all(abs(r['ref/log_ratio']) < 50 for r in rows)  # reference log-probs were filled in (no NaN)


@pytest.mark.slow
def test_diversity_metrics_are_logged_without_stalling(tmp_path):
    "diversity_every: measurements of the latest search run in a worker thread and land in later rows of metrics.jsonl"
    asyncio.run(run(task='t_vowels', steps=5, placement='inline', eval=False, diversity_every=1, diversity_embedding=False,
                    out_dir=str(tmp_path), **TINY))
    rows = [r for r in map(json.loads, open(tmp_path / 'metrics.jsonl')) if 'diversity/distinct_1' in r]
    assert rows and all(0 <= r['diversity/distinct_1'] <= 1 and r['diversity/of_step'] <= r['step'] for r in rows)
    assert {'diversity/self_bleu', 'diversity/distinct_correct', 'diversity/seconds'} <= set(rows[0])


def wandb_history(run_dir: Path) -> list:
    "(step, {key: value}) of every history record wandb wrote offline under run_dir (its .wandb files: LevelDB-log framed protobuf records)"
    import struct
    from wandb.proto import wandb_internal_pb2 as pb
    out = []
    for f in sorted(run_dir.glob('wandb/offline-run-*/run-*.wandb')):
        data, pos, rec = f.read_bytes(), 7, b''  # after the file header
        while pos + 7 <= len(data):
            if 32768 - pos % 32768 < 7: pos += 32768 - pos % 32768; continue  # block trailer
            n, kind = struct.unpack('<HB', data[pos + 4:pos + 7])
            rec, pos = rec + data[pos + 7:pos + 7 + n], pos + 7 + n
            if kind == 0: break
            if kind in (2, 3): continue  # first / middle chunk of a record
            r = pb.Record(); r.ParseFromString(rec); rec = b''
            if r.WhichOneof('record_type') == 'history':
                out.append((r.history.step.num, {i.nested_key[0] if i.nested_key else i.key: json.loads(i.value_json) for i in r.history.item}))
    return out


def test_wandb_receives_the_metrics_and_a_resume_continues_its_run(tmp_path, monkeypatch):
    monkeypatch.setenv('WANDB_MODE', 'offline'); monkeypatch.setenv('WANDB_SILENT', 'true')
    kw = dict(TINY, task='t_vowels', mode='sync', placement='inline', eval=False, log_with=['wandb'], wandb_project='tba-test')
    asyncio.run(run(steps=2, out_dir=str(tmp_path), **kw))
    run_id = (tmp_path / 'wandb_id').read_text()
    asyncio.run(run(steps=3, out_dir=str(tmp_path), resume=tmp_path, **kw))
    assert (tmp_path / 'wandb_id').read_text() == run_id
    assert {p.name.split('-')[-1] for p in (tmp_path / 'wandb').glob('offline-run-*')} == {run_id}
    hist = wandb_history(tmp_path)
    rows = [json.loads(l) for l in open(tmp_path / 'metrics.jsonl')]
    assert [s for s, _ in hist] == [r['step'] for r in rows] == [1, 2, 3]
    for (_, h), r in zip(hist, rows):
        assert h['loss/tb'] == pytest.approx(r['loss/tb']) and h['train/step'] == r['train/step']


def test_missing_logger_package_is_named_before_any_model_loads(monkeypatch):
    import tba_kit.build as B
    monkeypatch.setattr(B, 'make_policy', lambda cfg: pytest.fail('a model was loaded'))
    monkeypatch.setitem(B.SINKS, 'wandb', type('Sink', (), {'needs': ('wandb_not_installed_here', 'pip install wandb')}))
    with pytest.raises(ImportError, match='pip install wandb'): asyncio.run(run(model='tiny', log_with=['wandb']))


def test_run_closes_a_task_that_holds_resources(tmp_path):
    "A task with close() (e.g. red-teaming with a vLLM victim) is closed when the run ends, also when it fails"
    closed = []
    class Closing(PromptTask):
        def close(self): closed.append(True)
    T.TASKS['t_closing'] = lambda **kw: Closing([f'Say word {i}' for i in range(6)], vowels, name='closing')
    asyncio.run(run(task='t_closing', steps=2, placement='inline', eval=False, out_dir=str(tmp_path / 'ok'), **TINY))
    assert closed == [True]
    T.TASKS['t_closing_broken'] = lambda **kw: Closing([f'Say word {i}' for i in range(6)], broken, name='closing')
    with pytest.raises(RewardError):
        asyncio.run(run(task='t_closing_broken', steps=20, placement='inline', eval=False, out_dir=str(tmp_path / 'bad'), **TINY))
    assert closed == [True, True]


ROOT = Path(__file__).resolve().parents[1]
TINY_CLI = ['configs/quickstart.yaml', '--lr_schedule=constant', '--model=tiny', '--task_args={n_train: 40, n_test: 4}', '--k=4', '--prompts_per_step=2',
            '--search_prompts=2', '--max_new_tokens=6', '--prefill=8', '--precision=fp32', '--eval=false', '--no-progress']


def tba_train(*args):
    return subprocess.Popen([sys.executable, '-m', 'tba_kit.cli', 'train', *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for_steps(out:Path, n:int, proc, timeout:float=300.) -> list:
    "Metric rows of a live run once it has logged `n` steps"
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        rows = [json.loads(l) for l in open(out / 'metrics.jsonl')] if (out / 'metrics.jsonl').exists() else []
        if len(rows) >= n: return rows
        time.sleep(0.1)
    raise AssertionError(f"no {n} steps within {timeout} s")


@pytest.mark.process
def test_ctrl_c_writes_a_checkpoint_of_the_last_step_and_resume_continues(tmp_path):
    out = tmp_path / 'run'
    p = tba_train(*TINY_CLI, '--steps=100000', f'--out_dir={out}')
    wait_for_steps(out, 3, p)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err[-3000:]
    assert 'finishing the current step and writing a checkpoint' in err and 'interrupted at step' in err, err[-3000:]
    rows = [json.loads(l) for l in open(out / 'metrics.jsonl')]
    ck = find_checkpoint(out)
    assert int(ck.name.split('_')[1]) == rows[-1]['train/step'] >= 3  # the last finished step, recorded and checkpointed
    assert len(torch.load(ck / 'buffer.pt', weights_only=False)['prompts']) > 0  # the replay buffer is kept
    n = rows[-1]['train/step']
    r = subprocess.run([sys.executable, '-m', 'tba_kit.cli', 'train', '--resume', str(out), f'--steps={n + 2}', '--no-progress'],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert [r['train/step'] for r in map(json.loads, open(out / 'metrics.jsonl'))] == list(range(1, n + 3))


@pytest.mark.process
def test_a_second_ctrl_c_exits_at_once():
    "The first SIGINT cancels the run, which takes its time to finish the step and checkpoint; a second one exits at once"
    code = """
import asyncio, sys
from tba_kit.cli import run_interruptible
async def long_run():
    print('running', flush=True)
    try: await asyncio.sleep(100)
    except asyncio.CancelledError:
        print('finishing the step in flight', flush=True)
        await asyncio.sleep(60)  # a slow step and checkpoint
run_interruptible(long_run())
"""
    p = subprocess.Popen([sys.executable, '-c', code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline() == 'running\n'  # imports done, the loop running (a fixed sleep lost the race on a loaded machine)
    p.send_signal(signal.SIGINT)
    assert p.stdout.readline() == 'finishing the step in flight\n'
    t = time.monotonic()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130 and 'exiting at once' in err, err[-3000:]
    assert time.monotonic() - t < 5


@pytest.mark.process
def test_signals_act_when_stderr_is_gone(tmp_path):
    "A run whose stderr reader died (a benchmark driver killed, a closed pipe) still checkpoints on SIGTERM and exits"
    out = tmp_path / 'run'
    p = tba_train(*TINY_CLI, '--steps=100000', f'--out_dir={out}')
    wait_for_steps(out, 2, p)
    p.stderr.close()  # nobody reads the run's messages any more: writing them fails with a broken pipe
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=120) == 130
    rows = [json.loads(l) for l in open(out / 'metrics.jsonl')]
    assert int(find_checkpoint(out).name.split('_')[1]) == rows[-1]['train/step'] >= 2


@pytest.mark.process
def test_searcher_process_runs_at_the_niceness_asked():
    async def main():
        s = await ProcessSearcher('tiny', reward=vowels, tiny=dict(seed=0), nice=7).start()
        try: return int((Path(f'/proc/{s.proc.pid}') / 'stat').read_text().rsplit(')', 1)[1].split()[16])  # field 19: nice
        finally: await s.aclose()
    assert asyncio.run(main()) == min(os.nice(0) + 7, 19)  # niceness stops at 19
    with pytest.raises(ValueError, match='nice must be in 0..19'): ProcessSearcher('tiny', nice=20)


def lonely(prompts, completions, **kw):
    "Scores one completion of each prompt (None: the others)"
    seen = set()
    return [None if repr(p) in seen or seen.add(repr(p)) else 0.5 for p in prompts]
T.TASKS['t_lonely'] = lambda **kw: PromptTask([f'Say word {i}' for i in range(6)], lonely, name='lonely')


def test_sync_run_stops_when_no_group_is_large_enough(tmp_path):
    "VarGrad needs two scored completions of a prompt: when a reward scores one of each, a sync round (fresh completions only) stops the run with a reason instead of searching forever (async mode pools a prompt's completions across searches in the buffer)"
    with pytest.raises(RewardError, match='no prompt with the 2 scored completions'):
        asyncio.run(asyncio.wait_for(run(task='t_lonely', objective='vargrad', mode='sync', steps=3, placement='inline', eval=False, out_dir=str(tmp_path), **TINY), 120))


def test_validation_run_trains_and_evaluates_on_disjoint_training_prompts(tmp_path):
    "validation: n holds out n training prompts (the same draw whatever the seed), evaluates on them, never on the test split; refused when too large"
    kw = dict(TINY, task='arithmetic', task_args=dict(n_train=20, n_test=5, answer_prefix='The answer is'), mode='sync', placement='inline',
              steps=2, validation=6, checkpoint_every=0)
    for seed in (0, 1):
        asyncio.run(run(out_dir=str(tmp_path / f's{seed}'), seed=seed, **kw))
    task = T.make_task('arithmetic', **kw['task_args'])
    evaluated = [[json.loads(l)['prompt'] for l in open(f)] for f in sorted((tmp_path / 's0' / 'evals').iterdir())]
    valid = [q.text() for q in T.ValidationSplit(task, 6).prompts('test')]
    assert evaluated == [valid, valid] and set(valid) <= {q.text() for q in task.prompts('train')}
    assert not set(valid) & {q.text() for q in task.prompts('test')}
    assert [json.loads(l)['prompt'] for l in open(tmp_path / 's1' / 'evals' / 'step_000000.jsonl')] == valid  # seed 1: the same problems
    with pytest.raises(ValueError, match="'validation': must be between 1 and 19"):
        asyncio.run(run(out_dir=str(tmp_path / 'x'), **kw | dict(validation=20)))
