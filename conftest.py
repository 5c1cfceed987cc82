"""Repository-level conftest: the plugin itself is loaded through its ``pytest11`` entry point
once the package is installed (``pip install -e .``); ``pytester`` drives the plugin's own
tests (tests/unit/test_plugin.py)."""

pytest_plugins = ["pytester"]
