"""Searchers as Ray actors on a cluster of several nodes started on this machine (`ray.cluster_utils.Cluster`): where
they run, weights reaching every node, a node removed, an actor killed, a node added, an actor hung, the trainer
SIGKILLed and resumed."""
import asyncio, json, os, signal, subprocess, sys, time
from pathlib import Path

import pytest
import ray
from ray.cluster_utils import Cluster

from test_loop import ROOT, TINY_CLI, tba_train
from tba_kit.buffer import _dedup_key
from tba_kit.checkpoints import find_checkpoint
from tba_kit.config import Config
from tba_kit.build import build
from tba_kit.loop import Run

pytestmark = [pytest.mark.cluster]

NODES = 3  # worker nodes, one CPU each: one searcher per node; the head (no CPUs) holds the driver
STORE = 80 * 2**20


@pytest.fixture(scope='module')
def cluster():
    # Ray starts workers at niceness 15: beside the test's nice-0 trainer on 2 cores a restarted actor took minutes to import
    # torch; at 5 its scheduler weight is a third of the trainer's (at 15: 1/28), and the actors' reset to 0 is still seen
    with pytest.MonkeyPatch.context() as env:
        env.setenv('RAY_worker_niceness', '5')  # read by every raylet this module starts, also the nodes added back later
        c = Cluster(initialize_head=True, head_node_args=dict(num_cpus=0, object_store_memory=STORE))
        for _ in range(NODES): c.add_node(num_cpus=1, object_store_memory=STORE)
        c.wait_for_nodes()
        ray.init(address=c.address)
        yield c
        ray.shutdown(); c.shutdown()


@pytest.fixture
def nodes(cluster, request):
    "The worker nodes, NODES of them again after a test that removed or added some"
    if os.environ.get('PYTEST_XDIST_WORKER'):  # two local clusters at once starve each other's actors on 2 cores
        assert request.node.nodeid.endswith('@ray'), "under pytest-xdist the Ray tests share one worker: run with `--dist loadgroup`"
    yield cluster
    workers = list(cluster.worker_nodes)
    for n in workers[NODES:]: cluster.remove_node(n)
    for _ in range(NODES - len(workers)): cluster.add_node(num_cpus=1, object_store_memory=STORE)
    cluster.wait_for_nodes()


def tiny_run(tmp_path, **kw) -> Run:
    cfg = Config(**dict(model='tiny', task='arithmetic', task_args={'n_train': 40, 'n_test': 4}, k=4, prompts_per_step=2, search_prompts=2,
                        max_new_tokens=6, prefill=8, precision='fp32', lr=1e-3, eval=False, placement='ray', searchers=2,
                        out_dir=str(tmp_path / 'run')) | kw)
    return Run(build(cfg, progress=False), progress=False)


def spy_searches(run:Run) -> list:
    "Record each finished search: (searcher, prompt ids asked, prompt ids of the completions returned, the completions)"
    log, search_once = [], run.pool.search_once
    async def spy(searcher, prompts, k=None):
        trajs = await search_once(searcher, prompts, k)
        log.append((searcher.name, [p.id for p in prompts], [t.prompt_id for t in trajs], trajs))
        return trajs
    run.pool.search_once = spy
    return log


async def at_step(run:Run, n:int, timeout:float=300.):
    "Wait for step `n`: a guard against a hang, as `until`"
    t = time.monotonic()
    while run.trainer.step_count < n:
        assert time.monotonic() - t < timeout, f"no step {n} within {timeout} s"
        await asyncio.sleep(0.05)


async def until(cond, what:str, timeout:float=480., state=lambda: ''):
    "Wait for `cond`: a guard against a hang, not a speed goal (on a loaded 2-core CI machine an actor's restart took over 180 s)"
    t = time.monotonic()
    while not cond():
        assert time.monotonic() - t < timeout, f"not within {timeout:.0f} s: {what}; {state()}"
        await asyncio.sleep(0.1)


def node_ids(cluster) -> set: return {n.node_id for n in cluster.worker_nodes}


def fault_run(run:Run, fault, i:int=0) -> list:
    "Run until step 3, apply `fault(searcher i)`, go on until that searcher finished 2 searches after it, stop; the spied searches"
    log = spy_searches(run)
    async def main():
        async def inject():
            await at_step(run, 3)
            s = run.searchers[i]
            out = await fault(s)
            n = len(log)
            await until(lambda: sum(name == s.name for name, *_ in log[n:]) >= 2, f"{s.name} searching again",
                        state=lambda: f"at step {run.trainer.step_count}: {run.searchers}, restarts {[x.restarts for x in run.searchers]}, "
                                      f"searches since the fault by {[name for name, *_ in log[n:]]}")
            run.stop()
            return out
        return (await asyncio.gather(run(), inject()))[1]
    return log, asyncio.run(main())


def assert_nothing_lost(run:Run, log:list, k:int=4):
    "Every finished search returned each of its prompts exactly k times; the buffer holds each distinct completion once"
    for _, asked, got, _ in log: assert sorted(got) == sorted(p for p in asked for _ in range(k)), (asked, got)
    distinct = {(t.prompt_id, _dedup_key(t)) for *_, trajs in log for t in trajs}
    assert len(run.buffer) == len(distinct)


def test_searchers_spread_over_nodes_and_weights_reach_every_node(nodes, tmp_path):
    run = tiny_run(tmp_path, searchers=NODES, steps=10_000)
    async def main():
        async def stop_once_trained_weights_searched_everywhere():
            await until(lambda: len(run.searchers) == NODES and all(s.version >= 2 for s in run.searchers), 'weights on every node')
            run.stop()
        await asyncio.gather(run(), stop_once_trained_weights_searched_everywhere())
    asyncio.run(main())
    assert all(s.spec['score']['task'] == 'tba_kit.tasks:ArithmeticTask' for s in run.searchers)  # a named task: each actor scored its completions
    assert len(run.buffer) and all(isinstance(t.reward, float) for t in run.buffer.trajectories())
    where = [s.where['node'] for s in run.searchers]
    assert len(set(where)) == NODES and set(where) == node_ids(nodes)  # one per worker node, none on the head
    assert [s.where['nice'] for s in run.searchers] == [0] * NODES  # not the cluster's 5 (Ray's default 15: beside a busy trainer ~4% of a core)
    spans = [json.loads(l) for l in open(Path(run.cfg.out_dir) / 'timeline.jsonl')]
    for s in run.searchers:  # each searched with weights the trainer published after step 2, fetched on its own node
        assert any(x['who'] == s.name and x['kind'] == 'search' and (x.get('version') or 0) >= 2 for x in spans), s.name


def test_a_removed_node_loses_nothing(nodes, tmp_path):
    run = tiny_run(tmp_path, steps=10_000, searcher_nice=2)
    async def remove(s):
        victim = next(n for n in nodes.worker_nodes if n.node_id == s.where['node'])
        await asyncio.to_thread(nodes.remove_node, victim)
        return victim.node_id
    log, gone = fault_run(run, remove)
    s = run.searchers[0]
    assert s.restarts == 1 and s.nodes[0] == gone and s.where['node'] in node_ids(nodes) - {gone}  # restarted on another node
    assert s.version >= 3 and s.where['nice'] == 2  # with the trained weights and the configured niceness
    assert_nothing_lost(run, log)


def test_a_killed_actor_is_replaced_with_the_current_weights(nodes, tmp_path):
    run = tiny_run(tmp_path, steps=10_000)
    async def kill(s): ray.kill(s.actor)
    log, _ = fault_run(run, kill, i=1)
    assert run.searchers[1].restarts == 1 and run.searchers[1].version >= 3
    assert_nothing_lost(run, log)


def test_a_hung_actor_times_out_and_is_replaced(nodes, tmp_path):
    run = tiny_run(tmp_path, steps=10_000, search_timeout=4)
    async def hang(s): os.kill(s.where['pid'], signal.SIGSTOP)
    log, _ = fault_run(run, hang)
    assert run.searchers[0].restarts == 1
    assert_nothing_lost(run, log)


def test_a_node_added_mid_run_gets_a_searcher(nodes, tmp_path):
    for n in list(nodes.worker_nodes)[2:]: nodes.remove_node(n)  # two nodes: both taken
    run = tiny_run(tmp_path, steps=10_000, max_searchers=3)
    async def main():
        async def add():
            await at_step(run, 3)
            assert len(run.searchers) == 2  # no room for a third
            new = nodes.add_node(num_cpus=1, object_store_memory=STORE)  # (blocks the loop a moment: Ray wants the main thread)
            await until(lambda: len(run.searchers) == 3 and run.searchers[2].searches >= 2, 'a searcher on the new node')
            run.stop()
            return new.node_id
        return await asyncio.gather(run(), add())
    _, new = asyncio.run(main())
    assert run.searchers[2].where['node'] == new and run.searchers[2].version >= 3  # joined with the trained weights


def test_trainer_sigkill_and_resume_with_ray(nodes, tmp_path):
    out = tmp_path / 'killed'
    args = [*TINY_CLI, '--placement=ray', f'--ray_address={nodes.address}', '--searchers=2', '--checkpoint_every=2', f'--out_dir={out}']
    p = tba_train(*args, '--steps=40')
    t = time.monotonic()
    while not list((out / 'checkpoints').glob('step_*')):
        assert p.poll() is None and time.monotonic() - t < 180, p.communicate()[1][-3000:]
        time.sleep(0.1)
    p.kill(); p.wait()
    r = subprocess.run([sys.executable, '-m', 'tba_kit.cli', 'train', '--resume', str(out), '--steps=40', '--no-progress'], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert 'resumed from' in r.stderr and find_checkpoint(out).name == 'step_000040'
    t = time.monotonic()  # the killed run's actors died with it, the resumed run's were closed: every CPU is free again
    while ray.available_resources().get('CPU', 0) < NODES:
        assert time.monotonic() - t < 60, f"searcher actors still hold CPUs: {ray.available_resources()}"
        time.sleep(0.5)


def test_trainer_ranks_are_ray_actors_in_a_placement_group_and_one_lost_stops_the_run(nodes, tmp_path):
    "placement: ray with trainer_procs: 2: rank 1 is an actor in a placement group, the steps equal one process's; its actor killed mid-run stops the run by name"
    from tba_kit.ranks import RankError, RayRank
    runs = {}
    for name, procs in [('one', 1), ('two', 2)]:
        runs[name] = run = tiny_run(tmp_path / name, mode='sync', searchers=1, steps=3, seed=1, trainer_procs=procs)
        if procs == 2:
            (rank1,) = run.trainer.procs
            assert isinstance(rank1, RayRank) and rank1.pid != os.getpid() and ray.util.placement_group_table(rank1.pg)['state'] == 'CREATED'
            assert rank1.nice == 0  # the test cluster starts workers at 5: the rank actor resets it to rank 0's
        asyncio.run(run())
    rows = {n: [json.loads(l) for l in open(r.out / 'metrics.jsonl')] for n, r in runs.items()}
    assert [r['train/step'] for r in rows['two']] == [1, 2, 3]
    for a, b in zip(rows['one'], rows['two']):
        for k in ('loss/tb', 'train/grad_norm'): assert b[k] == pytest.approx(a[k], rel=1e-5, abs=1e-5), (a['train/step'], k)
    assert ray.util.placement_group_table(rank1.pg)['state'] == 'REMOVED'  # released with the run

    run = tiny_run(tmp_path / 'killed', trainer_procs=2, steps=100000, checkpoint_every=1)
    async def kill_rank_1():
        task = asyncio.ensure_future(run())
        await at_step(run, 2)
        ray.kill(run.trainer.procs[0].actor)
        with pytest.raises(RankError, match=r"trainer rank 1 \(pid \d+\) lost its Ray actor .* during '\w+' at step"): await asyncio.wait_for(task, 120)
    asyncio.run(kill_rank_1())
    assert find_checkpoint(run.out).name >= 'step_000001'  # the last periodic checkpoint (the one in flight may fail): --resume continues from it
