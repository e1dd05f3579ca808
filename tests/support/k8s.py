"""deploy/k8s/generate.py loaded as a module (it is a script, not a package), for the tests that
read the manifests it writes and renders."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"


def generator() -> Any:
    spec = importlib.util.spec_from_file_location("k8s_generate", K8S / "generate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
