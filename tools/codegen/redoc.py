"""``make redoc``: vendor the docs page's renderer from the npm package pinned in
``libs/common/static/redoc.json``.

``npm pack`` fetches the package's tarball from the registry; it is refused unless its sha512
equals the pinned ``integrity`` (the registry's own ``dist.integrity``), then its
``bundles/redoc.standalone.js`` and licence are written beside the manifest with the bundle's
sha256, which the service checks before serving it. To move to another release, set
``version`` and ``integrity`` (``npm view redoc@<v> dist.integrity``) and run ``make redoc``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from common.docs_page import MANIFEST, STATIC


def vendor() -> str:
    pinned = json.loads(MANIFEST.read_text())
    spec = f"{pinned['package']}@{pinned['version']}"
    with tempfile.TemporaryDirectory() as tmp:
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("redoc: npm is not on PATH (make setup installs Node 20's npm)")
        run = subprocess.run(  # nosec B603 - npm by its resolved path, argv list
            [npm, "pack", spec, "--silent", "--pack-destination", tmp],
            capture_output=True,
            text=True,
            check=False,
        )
        if run.returncode != 0:
            raise RuntimeError(f"npm pack {spec} failed: {run.stderr}")
        tarball = Path(tmp) / run.stdout.strip().splitlines()[-1]
        raw = tarball.read_bytes()
        integrity = "sha512-" + base64.b64encode(hashlib.sha512(raw).digest()).decode()
        if integrity != pinned["integrity"]:
            raise RuntimeError(f"{spec}: integrity {integrity} is not the pinned {pinned['integrity']}")
        with tarfile.open(tarball) as tar:
            for name in (pinned["file"], pinned["file"] + ".LICENSE.txt"):
                member = tar.extractfile(f"package/bundles/{name}")
                if member is None:
                    raise RuntimeError(f"{spec} has no bundles/{name}")
                (STATIC / name).write_bytes(member.read())
    pinned["sha256"] = hashlib.sha256((STATIC / pinned["file"]).read_bytes()).hexdigest()
    MANIFEST.write_text(json.dumps(pinned, indent=2) + "\n")
    return f"redoc: vendored {spec} ({pinned['sha256']})"


if __name__ == "__main__":
    print(vendor())
    sys.exit(0)
