"""A local Ray cluster started by ``fincon experiment --executor ray`` leaves
nothing behind (issue 18, item 5): no auth token in the home folder, no
session in Ray's shared ``/tmp/ray``, no directory in the temp folder; it
listens on the loopback interface only; and fincon uses no private Ray API.

The cluster runs in a child process with a home folder and a temp folder of
its own, so the listings before and after are this test's alone (other Ray
users on the machine may add sessions to ``/tmp/ray`` meanwhile: only a
session named after the child's PID would be ours)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import fincon

if importlib.util.find_spec("ray") is None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("ray is not installed: pip install 'fincon[ray]' (the CI runs these tests)", pytrace=False)
    pytest.skip("ray is not installed (pip install 'fincon[ray]')", allow_module_level=True)

CHILD = """
import json, os, sys
from fincon.workflow.ray_executor import RayExecutor

seen = {}
for cluster in (1, 2):  # a second cluster in the same process (a new token, a new temp dir) works too
    with RayExecutor(cpus=1) as ex:
        got = []
        ex([os.getpid], lambda i, r: got.append(r))
        import ray
        seen = {"tmp": os.environ.get("RAY_TMPDIR"), "ip": ray.util.get_node_ip_address(),
                "worker": got[0], "files": sorted(os.listdir(os.environ["RAY_TMPDIR"]))}
print(json.dumps(dict(seen, pid=os.getpid(), after={k: os.environ.get(k) for k in
      ("RAY_TMPDIR", "RAY_AUTH_TOKEN", "RAY_AUTH_MODE")})))
"""


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def short_tmp():
    """A temp folder with a short path: Ray's Unix sockets live under it, and
    their paths may not exceed 107 bytes (pytest's tmp_path is too long)."""
    path = Path(tempfile.mkdtemp(prefix="t", dir="/tmp"))
    yield path
    shutil.rmtree(path)


@pytest.mark.slow
def test_a_local_cluster_leaves_nothing_behind(tmp_path, short_tmp):
    home, tmp = tmp_path / "home", short_tmp
    home.mkdir()
    (home / ".bashrc").write_text("# a file of the user's\n")
    before = listing(home), listing(tmp)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(HOME=str(home), TMPDIR=str(tmp), PYTHONPATH=str(Path(fincon.__file__).parents[1]))
    res = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    seen = json.loads(res.stdout.strip().splitlines()[-1])
    # while it ran, Ray's files were in a directory of fincon's, in the temp folder
    assert Path(seen["tmp"]).parent == tmp and Path(seen["tmp"]).name.startswith("fincon-ray-")
    assert "ray" in seen["files"]
    assert seen["worker"] != seen["pid"]  # the task ran in a Ray worker, not in the driver
    assert seen["ip"] == "127.0.0.1"  # loopback only
    # afterwards: the same home folder (no ~/.ray/auth_token), an empty temp folder, the environment restored
    assert (listing(home), listing(tmp)) == before
    token = seen["after"].pop("RAY_AUTH_TOKEN")  # the process' token, in its environment only
    assert re.fullmatch(r"[0-9a-f]{64}", token) and token not in json.dumps(before)
    assert seen["after"] == {"RAY_TMPDIR": None, "RAY_AUTH_MODE": None}
    shared = Path("/tmp/ray")
    if shared.is_dir():
        assert not [p.name for p in shared.iterdir() if p.name.endswith(f"_{seen['pid']}")]


def test_no_private_ray_api():
    """``ray._private``, ``ray._raylet`` and underscore arguments of Ray change
    without notice between releases: fincon uses none of them."""
    root = Path(fincon.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\bray\._|ray_constants|\b_temp_dir\b|\b_node_ip_address\b|\b_system_config\b", line):
                found.append(f"{path.relative_to(root)}:{n}: {line.strip()}")
    assert found == []
