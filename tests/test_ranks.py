"""`trainer_procs: 2` from the command line (started by `tba train`, or by torchrun; sharded or data parallel): the run's
steps equal one process's, a checkpoint written on two ranks resumes on one and one written by one process on two, and a rank that is killed or hangs stops the run with its name (never a hang), after which `--resume` finishes it."""
import json, os, signal, subprocess, sys, time
from pathlib import Path

import psutil
import pytest
from safetensors.torch import load_file
import torch

from test_loop import ROOT, TINY_CLI, tba_train, wait_for_steps
from tba_kit.checkpoints import find_checkpoint
from tba_kit.models import tiny_model

pytestmark = [pytest.mark.process]

SYNC = [*TINY_CLI, '--mode=sync', '--lr=1e-3', '--seed=1']  # sync mode: the same batches in every run, whatever the ranks


def train(*args, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'tba_kit.cli', 'train', *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def rows(out:Path) -> list: return [r for r in map(json.loads, open(out / 'metrics.jsonl')) if 'train/step' in r]


def assert_same_run(a:Path, b:Path, rel:float=1e-5):
    "Step by step the same loss and gradient norm, and the same final weights, to 1e-5 (metrics: to `rel` relative)"
    ra, rb = rows(a), rows(b)
    assert [r['train/step'] for r in ra] == [r['train/step'] for r in rb]
    for x, y in zip(ra, rb):
        for k in ('loss/tb', 'train/grad_norm', 'tb/logZ', 'train/rows'):
            assert x[k] == pytest.approx(y[k], rel=rel, abs=1e-5), (x['train/step'], k, x[k], y[k])
    wa, wb = (load_file(find_checkpoint(p) / 'policy.safetensors') for p in (a, b))
    assert wa.keys() == wb.keys()
    for k in wa: torch.testing.assert_close(wb[k], wa[k], rtol=1e-5, atol=1e-5, msg=lambda m: f"{k}: {m}")
    start = tiny_model(seed=1)[0].state_dict()
    assert max(float((w - start[k]).abs().max()) for k, w in wa.items()) > 1e-3  # the steps moved the weights: the equality is not of untrained models


def test_two_ranks_equal_one_process_and_resume_on_one(tmp_path):
    one, two, ddp, split, trun = (tmp_path / name for name in ('one', 'two', 'ddp', 'split', 'torchrun'))
    for out, procs, steps, parallel in [(one, 1, 3, 'fsdp'), (two, 2, 3, 'fsdp'), (ddp, 2, 3, 'ddp'), (split, 2, 2, 'fsdp')]:
        r = train(*SYNC, f'--steps={steps}', f'--trainer_procs={procs}', f'--trainer_parallel={parallel}', f'--out_dir={out}')
        assert r.returncode == 0, r.stderr[-3000:]
    assert rows(two)[-1]["trainer/gather_seconds"] > 0 and "trainer/gather_seconds" not in rows(one)[-1]
    assert_same_run(one, two)
    assert_same_run(one, ddp, rel=1e-4)  # data parallel: gradients summed in another order; AdamW at lr 1e-3 makes 1e-7 into 1e-5 by step 3
    r = subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node=2', '-m', 'tba_kit.cli', 'train', *SYNC,
                        '--steps=3', '--trainer_procs=2', f'--out_dir={trun}'], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]  # torchrun started both ranks: rank 1 follows rank 0
    assert rows(trun)[-1]['trainer/gather_seconds'] > 0
    assert_same_run(one, trun)
    r = train('--resume', str(split), '--steps=3', '--trainer_procs=1', '--no-progress')  # written on two ranks, resumed on one
    assert r.returncode == 0, r.stderr[-3000:]
    assert_same_run(one, split)
    back = tmp_path / 'back'  # written by one process (AdamW's state keyed by position), resumed on two ranks
    for args in ([*SYNC, '--steps=2', f'--out_dir={back}'], ['--resume', str(back), '--steps=3', '--trainer_procs=2', '--no-progress']):
        r = train(*args)
        assert r.returncode == 0, r.stderr[-3000:]
    assert_same_run(one, back)


def test_a_follower_beating_without_pause_exits_cleanly():
    "A daemon thread inside a store call when its process exits aborts it ('terminate called without an active exception'); the heartbeat is stopped first"
    code = ("import time, torch.distributed as dist, tba_kit.ranks as r; port = r.free_port(); "
            "server = dist.TCPStore('127.0.0.1', port, 1, is_master=True, wait_for_workers=False); "
            "r.BEAT = 0.; stop = r.heartbeat(1, '127.0.0.1', port); time.sleep(0.5); stop()")  # BEAT 0: always in a store call
    for _ in range(2):  # without `stop()` every run aborts
        res = subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0 and 'terminate' not in res.stderr, (res.returncode, res.stderr[-2000:])


def followers(p) -> list:
    "The trainer ranks a `tba train` process started"
    return [c for c in psutil.Process(p.pid).children() if 'tba_kit.ranks' in ' '.join(c.cmdline())]


@pytest.mark.parametrize('fault', ['kill', 'hang', 'kill before a checkpoint'])
def test_a_rank_that_dies_or_hangs_stops_the_run_by_name_and_resume_finishes_it(tmp_path, fault):
    """Before: a stopped rank was found only at trainer_timeout (600 s by default) as 'a trainer rank did not answer', and the error
    promised a checkpoint to resume from when none had been written"""
    out = tmp_path / 'run'
    every = ['--checkpoint_every=0'] if fault == 'kill before a checkpoint' else ['--checkpoint_every=1']  # 0 with ranks: kept, and its cost said at start
    p = tba_train(*TINY_CLI, '--steps=100000', *every, '--trainer_procs=2', *(['--trainer_timeout=15'] if fault != 'hang' else []), f'--out_dir={out}')
    try:
        wait_for_steps(out, 3, p)
        (rank1,) = followers(p)
        t = time.monotonic()
        rank1.send_signal(signal.SIGSTOP if fault == 'hang' else signal.SIGKILL)
        _, err = p.communicate(timeout=120)
        took = time.monotonic() - t
    finally:
        if p.poll() is None: p.kill()
        for c in psutil.Process().children(recursive=True):
            if 'tba_kit.ranks' in ' '.join(c.cmdline()): c.kill()
    assert p.returncode == 1, err[-3000:]
    said = (f"trainer rank 1 (pid {rank1.pid}) stopped answering: no heartbeat for 30 s (its process is stopped" if fault == 'hang'
            else f"trainer rank 1 (pid {rank1.pid}) was killed by SIGKILL")
    assert said in err and 'writing its checkpoint failed' not in err, err[-3000:]
    assert took < (30 if fault != 'hang' else 60), took  # found at the next collective if dead; by its heartbeat (trainer_timeout is 600 s) if stopped
    if fault == 'kill before a checkpoint':
        assert "trainer ranks with checkpoint_every 0: a rank's fault loses every step" in err and 'checkpoint_every 25' not in err, err[-3000:]  # was replaced by 25
        assert 'No checkpoint was written before the fault, so nothing can be resumed' in err and '--resume' not in err, err[-3000:]
        return
    assert 'Continue from its last checkpoint (step_' in err and '--resume' in err, err[-3000:]
    done = rows(out)[-1]['train/step']
    r = train('--resume', str(out), f'--steps={done + 2}', '--trainer_procs=2', '--no-progress')
    assert r.returncode == 0, r.stderr[-3000:]
    assert find_checkpoint(out).name == f'step_{done + 2:06d}'


@pytest.mark.parametrize('procs', [1, 2])
def test_ctrl_c_in_a_terminal_stops_every_process_quietly(tmp_path, procs):
    """A terminal sends SIGINT to every process of the command: searcher workers and trainer ranks leave the stopping to
    the run (before: each searcher worker printed a KeyboardInterrupt traceback). The step finishes, its checkpoint is
    written with every rank, and nothing is left behind."""
    out = tmp_path / 'run'
    p = subprocess.Popen([sys.executable, '-m', 'tba_kit.cli', 'train', *TINY_CLI, '--steps=100000', f'--trainer_procs={procs}', f'--out_dir={out}'],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_for_steps(out, 2, p)
        kids = psutil.Process(p.pid).children(recursive=True)
        assert len([c for c in kids if 'tba_kit.ranks' in ' '.join(c.cmdline())]) == procs - 1
        os.killpg(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None: os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 130 and 'Traceback' not in err and 'KeyboardInterrupt' not in err, err[-3000:]
    assert 'checkpoint' in err and find_checkpoint(out).name == f"step_{rows(out)[-1]['train/step']:06d}"
    time.sleep(1)
    assert not [c for c in kids if c.is_running() and c.status() != psutil.STATUS_ZOMBIE], kids


def test_a_follower_that_fails_before_joining_is_named_at_once(monkeypatch):
    "Rank 0 waits for each follower's key in the store and watches its process meanwhile: no wait of trainer_timeout"
    import torch.distributed as dist
    import tba_kit.ranks as R
    from tba_kit.config import Config
    from tba_kit.objectives import ScalarLogZ, TrajectoryBalance
    real = subprocess.Popen
    monkeypatch.setattr(subprocess, 'Popen', lambda args, **kw: real([sys.executable, '-c', 'import sys; sys.exit(3)']))  # a follower that fails at import
    t = time.monotonic()
    with pytest.raises(R.RankError, match=r"trainer rank 1 \(pid \d+\) exited with code 3 before joining rank 0"):
        R.start_ranks(Config(model='tiny', trainer_procs=2, precision='fp32', trainer_timeout=120), tiny_model()[0],
                      TrajectoryBalance(0.5, ScalarLogZ(0.), 1e-2), lr=1e-3, precision='fp32')
    assert time.monotonic() - t < 30 and not dist.is_initialized()
