"""k3infra's component package under the real CLI: the schema it serves is the committed one."""

import json

from . import shims
from .pulumi_cli import ROOT

PROJECT = "name: k3infra-e2e-schema\nruntime: python\n"


def test_get_schema_equals_the_committed_schema(workspace, tmp_path) -> None:
    """``pulumi package get-schema`` starts components/__main__.py (component_provider_host) as a plugin and asks
    it for its schema, as ``pulumi package add`` does before generating an SDK."""
    ws = workspace(PROJECT)
    plugin = shims.component_provider(tmp_path / "plugin")
    served = json.loads(ws.cli("package", "get-schema", str(plugin)).stdout)
    committed = json.loads((ROOT / "components" / "schema.json").read_text())
    assert served == committed
