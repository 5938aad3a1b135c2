"Shared test options and helpers."
import os
from pathlib import Path


def pytest_addoption(parser):
    parser.addoption("--flags", default="", help="space-separated nbdev test flags to run (e.g. 'slow'); cells flagged "
                                                 "with the others in tst_flags are skipped")


def live_children(keep=lambda cmd: True) -> set:
    "PIDs of this process's live (non-zombie) children whose command line passes `keep`"
    out = set()
    for d in Path('/proc').iterdir():
        if not d.name.isdigit(): continue
        try: stat, cmd = (d / 'stat').read_text().rsplit(')', 1)[1].split(), (d / 'cmdline').read_bytes()
        except OSError: continue
        if int(stat[1]) == os.getpid() and stat[0] != 'Z' and keep(cmd): out.add(int(d.name))
    return out
