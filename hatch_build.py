"""Build hook: the demo data goes into the wheel as ``harness/_data/demo``, and only into a real wheel.

An editable install (``pip install -e .``, ``make``) maps ``harness`` and ``retrievers`` to the checkout by an
import hook (``dev-mode-exact`` in pyproject.toml). Copying the demo there too would leave a bare
``site-packages/harness/_data`` folder, which Python takes for a namespace package named ``harness`` ahead of
that hook; the checkout's package reads ``datasets/demo`` in place instead (harness.datasets).
"""

from __future__ import annotations

from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class DemoDataHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name == "wheel" and version == "standard":
            build_data["force_include"]["datasets/demo"] = "harness/_data/demo"
