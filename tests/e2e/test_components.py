"""k3infra's component package under the real CLI: the schema it serves is the committed one."""

import json
import re

from . import shims
from .pulumi_cli import ROOT

PROJECT = "name: k3infra-e2e-schema\nruntime: python\n"
CLOUD_PACKAGES = ("aws", "aws-native", "gcp", "azure-native", "alicloud", "time")
"""Packages whose types the schema references and whose plugins cannot be built here (no cloud provider can)."""


def test_get_schema_equals_the_committed_schema(cli_workspace, tmp_path) -> None:
    """``pulumi package get-schema`` starts components/__main__.py (component_provider_host) as a plugin, asks it
    for its schema and prints it as ``pulumi package add`` reads it. It then binds the schema, which loads every
    package the schema references: here that fails on the first cloud provider's plugin, and only there."""
    ws = cli_workspace(PROJECT)
    plugin = shims.component_provider(tmp_path / "plugin")
    proc = ws.cli("package", "get-schema", str(plugin), check=False)
    printed = json.loads(proc.stdout)
    committed = json.loads((ROOT / "components" / "schema.json").read_text())
    assert printed == committed
    if proc.returncode != 0:
        error = re.search(r"error: failed to bind schema: .*resolving package /([a-z-]+)/v[0-9.]+/schema\.json.*"
                          r"no resource plugin 'pulumi-resource-\1' found", proc.stderr)
        assert error and error[1] in CLOUD_PACKAGES, proc.stderr[-3000:]
