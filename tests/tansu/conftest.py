"""The tansu cases are opt-in: building Tansu takes tens of minutes (README "Matrix of
brokers"), so they run only when ``-m`` names ``tansu``; otherwise they are deselected
with one line saying how to run them."""

import pytest

MARKER = "tansu: runs against Tansu, a Kafka-compatible broker built once with cargo (opt-in)"


def pytest_configure(config):
    config.addinivalue_line("markers", MARKER)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    if "tansu" in (config.option.markexpr or ""):
        return
    drop = [item for item in items if item.get_closest_marker("tansu")]
    if not drop:
        return
    config.hook.pytest_deselected(items=drop)
    items[:] = [item for item in items if not item.get_closest_marker("tansu")]
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"kreplica: deselected {len(drop)} tansu case(s): opt-in, "
                            "run them with -m tansu (builds Tansu with cargo once)")
