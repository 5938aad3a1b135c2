def pytest_addoption(parser):
    parser.addoption("--flags", default="", help="space-separated nbdev test flags to run (e.g. 'slow'); cells flagged "
                                                 "with the others in tst_flags are skipped")
