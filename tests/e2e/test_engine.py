"""The harness itself under the real CLI, with no plugin: a program served to ``--client`` runs, its outputs reach
the file backend's state, a secret output only as ciphertext, and a second up changes nothing."""

import json

from .programs import SECRET_OUTPUT

PROJECT = "name: k3infra-e2e-engine\nruntime: python\n"
PROGRAM = "tests.e2e.programs:outputs_only"


def test_up_outputs_secrets_and_no_changes(cli_workspace) -> None:
    ws = cli_workspace(PROJECT)
    ws.stack_init("engine")
    ws.run(PROGRAM, "up", "--yes", "-s", "engine")
    assert ws.outputs("engine", show_secrets=True) == {"plain": {"answer": 42}, "token": SECRET_OUTPUT}
    assert ws.outputs("engine")["token"] == "[secret]"
    state = ws.state_file("k3infra-e2e-engine", "engine").read_text()
    assert SECRET_OUTPUT not in state
    assert json.loads(state)["checkpoint"]["latest"]["secrets_providers"]["type"] == "passphrase"
    ws.run(PROGRAM, "up", "--yes", "-s", "engine", "--expect-no-changes")
    ws.cli("destroy", "--yes", "-s", "engine")
