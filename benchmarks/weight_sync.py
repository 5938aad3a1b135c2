"""Weight sync from the trainer to a searcher process for SmolLM2-135M (bf16 on the wire), per weight channel, side by
side: `publish` on the trainer's side (fp32 master weights -> a snapshot in shared memory), then the worker installs it
before its next search (`sync/load_seconds`). `file`: a safetensors file on /dev/shm, read and copied into the model;
`shm`: a flat shared buffer the trainer converts into and the worker binds its parameters to (no copy). Prints medians
and writes benchmarks/results/weight_sync.json.

`ray`: a Ray cluster of `--nodes` nodes started on this machine (`ray.cluster_utils.Cluster`, one CPU each), one
searcher actor per node. `publish` packs the snapshot and puts it in the driver's object store once (`ray.put`);
each node's actor fetches it into its own node's store and copies it into its model before its next search (the
searches run one node after another, so that the 2-core machine does not time nodes against each other). A node
starts fetching a snapshot when it is published, beside the search it is running (`fetch`: the slowest node's
transfer, all nodes at once); `install`, on the search's path, then copies from the node's store into the model. Its
`install` figure is the median over nodes and repeats; `end_to_end` is publish + the slowest node's install.

    python benchmarks/weight_sync.py [--repeats 7] [--threads 1] [--channels file shm ray] [--nodes 3]
"""
import argparse, asyncio, json, statistics, sys, time
from pathlib import Path

import torch

from tba_kit.models import load_model
from tba_kit.workers import ProcessSearcher
from tba_kit.weights import CHANNELS
from tba_kit.tasks import PromptTask

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import provenance  # noqa: E402


async def measure(channel, model, repeats:int, searchers:list) -> dict:
    task = PromptTask(['Say hi'], lambda prompts, completions, **kw: [0.] * len(completions))
    for s in searchers: s.reward = task.reward
    await asyncio.gather(*(s.start() for s in searchers))
    publish, load, slowest, fetch = [], [], [], []
    try:
        for v in range(1, repeats + 1):
            with torch.no_grad(): next(model.parameters()).add_(1e-3)  # new weights each time
            t = time.perf_counter()
            handle = channel.publish(model, v, dtype=torch.bfloat16)
            publish.append(time.perf_counter() - t)
            loads = []
            for s in searchers: await s.load_weights(handle)
            if getattr(searchers[0], '_prefetch', None) is not None:  # Ray: each node fetches the snapshot as soon as it is published
                fetch.append(max(await asyncio.gather(*(s._prefetch for s in searchers))))
            for s in searchers:
                res = await s.search(task.prompts(), k=1)  # the worker installs the snapshot first and times it
                assert s.version == v
                loads.append(res.metrics['sync/load_seconds'])
            load += loads; slowest.append(max(loads))
    finally:
        await asyncio.gather(*(s.aclose() for s in searchers)); channel.close()
    return {'publish_seconds_median': statistics.median(publish), 'load_seconds_median': statistics.median(load),
            'end_to_end_seconds_median': statistics.median(a + b for a, b in zip(publish, slowest)),
            'publish_seconds': publish, 'load_seconds': load,
            **({'fetch_seconds_median': statistics.median(fetch), 'fetch_seconds': fetch} if fetch else {})}


def ray_cluster(nodes:int):
    "A local cluster: a head without CPUs (the driver) and `nodes` nodes of one CPU, each with room for two snapshots"
    import ray
    from ray.cluster_utils import Cluster
    c = Cluster(initialize_head=True, head_node_args=dict(num_cpus=0, object_store_memory=2 * 2**30))
    for _ in range(nodes): c.add_node(num_cpus=1, object_store_memory=1 * 2**30)
    c.wait_for_nodes(); ray.init(address=c.address)
    return c


async def main(repeats:int, threads:int, channels:list, nodes:int):
    torch.set_num_threads(threads)
    model, _ = load_model(dtype='float32')  # the trainer's fp32 master weights
    res = {'model': 'smollm2-135m-instruct', 'bytes': sum(p.numel() * 2 for p in model.parameters()), 'repeats': repeats,
           'trainer_threads': threads, 'channels': {}}
    proc = lambda: [ProcessSearcher('smollm2-135m-instruct', threads=1, max_new_tokens=1, ref=False)]
    for name in channels:
        if name == 'ray':
            from tba_kit.ray_searcher import RayChannel, RaySearcher
            cluster = ray_cluster(nodes)
            channel, searchers = RayChannel(), [RaySearcher('smollm2-135m-instruct', max_new_tokens=1, ref=False, name=f'ray{i}') for i in range(nodes)]
            res['nodes'] = nodes
        else: channel, searchers = CHANNELS.get(name)(), proc()
        r = res['channels'][name] = await measure(channel, model, repeats, searchers)
        if name == 'ray':
            assert len({s.where['node'] for s in searchers}) == nodes  # one actor per node
            import ray; ray.shutdown(); cluster.shutdown()
        print(f"{name}: publish {r['publish_seconds_median']:.3f} s + install {r['load_seconds_median']:.3f} s = "
              f"{r['end_to_end_seconds_median']:.3f} s (medians of {repeats})" +
              (f"; fetched to all {nodes} nodes, beside their searches, in {r['fetch_seconds_median']:.3f} s" if 'fetch_seconds' in r else ''), flush=True)
    out = Path(__file__).parent / 'results' / 'weight_sync.json'
    out.parent.mkdir(exist_ok=True); out.write_text(json.dumps({**provenance(), **res}, indent=1))


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): per weight channel, the seconds of a sync to the searchers: publish, install, end to end"
    out = []
    for name, r in rec['channels'].items():
        where = f"{rec['nodes']} Ray nodes" if name == 'ray' and 'nodes' in rec else 'a searcher process'
        out.append({'claim': f"weight sync, {name} channel, to {where} ({rec['model']}, {rec['bytes'] / 2**20:.0f} MB bf16, trainer {rec['trainer_threads']} thread{'s' * (rec['trainer_threads'] > 1)}): "
                             f"end to end; publish, install (medians of {rec['repeats']})",
                    'value': f"{r['end_to_end_seconds_median']:.3f} s; {r['publish_seconds_median']:.3f} s, {r['load_seconds_median']:.3f} s"
                             + (f"; fetched to every node beside their searches in {r['fetch_seconds_median']:.3f} s" if 'fetch_seconds_median' in r else '')})
    return out


if __name__ == '__main__':
    ap = argparse.ArgumentParser(); ap.add_argument('--repeats', type=int, default=7); ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--channels', nargs='+', default=['file', 'shm', 'ray']); ap.add_argument('--nodes', type=int, default=3)
    a = ap.parse_args()
    asyncio.run(main(a.repeats, a.threads, a.channels, a.nodes))
