"""``python -m tools.k8s build``: the cached kube-apiserver's path (built if missing);
``python -m tools.k8s dry-run``: the base and the overlays applied with ``--dry-run=server``
(:mod:`tools.k8s.dryrun`); exit 1 on any refusal or warning."""

from __future__ import annotations

import sys
import time

from tools.k8s import apiserver, dryrun
from tools.stack import etcd


def main(argv: list[str]) -> int:
    what = argv[0] if argv else "dry-run"
    if what not in ("build", "dry-run"):
        print(f"usage: python -m tools.k8s [build|dry-run] (not {what!r})", file=sys.stderr)
        return 2
    try:
        started = time.monotonic()
        path = apiserver.build()
        etcd.build()
        size = path.stat().st_size / 2**20
        print(
            f"kube-apiserver {apiserver.KUBERNETES_VERSION}: {path}"
            f" ({size:.0f} MiB; {time.monotonic() - started:.1f} s)"
        )
        print(f"etcd {etcd.ETCD_VERSION}: {etcd.binary()}")
    except (apiserver.ApiServerUnavailable, etcd.EtcdUnavailable) as exc:
        print(f"k8s: {exc}", file=sys.stderr)
        return 1
    return dryrun.main() if what == "dry-run" else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
