"Shared test options and helpers."
import os
from pathlib import Path

import pytest


# the slow tier: what trains a real model, spawns processes, starts Ray, opens a browser or needs vLLM (markers that
# pyproject.toml registers). `python -m pytest` runs the rest, the fast tier; `--tier=slow` the slow tier alone;
# `--tier=all` both. Tests named on the command line (a file, a node id) run whatever their tier; `-m EXPR` chooses alone.
TIERS = ('slow', 'process', 'cluster', 'browser', 'vllm')


def pytest_addoption(parser):
    parser.addoption("--flags", default="", help="space-separated nbdev test flags to run (e.g. 'slow'); cells flagged "
                                                 "with the others in tst_flags are skipped")
    parser.addoption("--tier", default=None, choices=("fast", "slow", "all"),
                     help="fast (the default): leave out tests marked " + ", ".join(TIERS) + "; slow: only those; all: both "
                          "(the default is all when tests are named on the command line)")


def tier(config) -> str:
    given = config.getoption('--tier')
    if config.getoption('markexpr'):
        if given: raise pytest.UsageError("give either --tier or -m, not both: -m EXPR chooses the tests by marker itself")
        return 'all'
    if given: return given
    return 'fast' if config.args_source != pytest.Config.ArgsSource.ARGS else 'all'  # no tests named: the fast tier


def pytest_configure(config):
    "Resolve the tier once, in the process that reads the command line: pytest-xdist's workers receive its options"
    if not hasattr(config, 'workerinput') and not config.getoption('markexpr'): config.option.tier = tier(config)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook, which reads the `xdist_group` marks to suffix node ids
def pytest_collection_modifyitems(config, items):
    "Keep the tier asked for (the others are reported as deselected); under pytest-xdist, tests that start Ray share one worker"
    if config.pluginmanager.hasplugin('xdist'):  # `-n 2 --dist loadgroup`: two local Ray clusters at once starve each other on 2 cores
        for i in items:
            if i.get_closest_marker('cluster'): i.add_marker(pytest.mark.xdist_group('ray'))
    if (t := tier(config)) == 'all': return
    keep = {i: any(i.get_closest_marker(m) for m in TIERS) == (t == 'slow') for i in items}
    if out := [i for i in items if not keep[i]]: config.hook.pytest_deselected(items=out)
    items[:] = [i for i in items if keep[i]]


def pytest_report_header(config):
    t = tier(config)
    return None if t == 'all' else f"{t} tier: tests {'not ' if t == 'fast' else ''}marked {' / '.join(TIERS)} (--tier=all runs every test)"


def live_children(keep=lambda cmd: True) -> set:
    "PIDs of this process's live (non-zombie) children whose command line passes `keep`"
    out = set()
    for d in Path('/proc').iterdir():
        if not d.name.isdigit(): continue
        try: stat, cmd = (d / 'stat').read_text().rsplit(')', 1)[1].split(), (d / 'cmdline').read_bytes()
        except OSError: continue
        if int(stat[1]) == os.getpid() and stat[0] != 'Z' and keep(cmd): out.add(int(d.name))
    return out
