"""A flame graph (SVG) from collapsed stacks (``a;b;c 12`` lines, as py-spy's ``raw`` format
and flamegraph.pl use), without a dependency: one rectangle per frame, width by samples."""

from __future__ import annotations

import html
from collections import Counter
from pathlib import Path
from typing import Any

WIDTH, ROW, MIN_PX = 1600, 16, 0.5


def _tree(stacks: Counter[str]) -> dict[str, Any]:
    root: dict[str, Any] = {"n": 0, "kids": {}}
    for stack, n in stacks.items():
        node = root
        node["n"] += n
        for frame in stack.split(";"):
            node = node["kids"].setdefault(frame, {"n": 0, "kids": {}})
            node["n"] += n
    return root


def _hue(name: str) -> str:
    h = sum(map(ord, name)) % 60
    return f"hsl({h},80%,{55 + h % 15}%)"


def write_svg(stacks: Counter[str], path: Path, title: str = "") -> None:
    root = _tree(stacks)
    total = max(1, root["n"])
    rects: list[str] = []
    depth_max = 0

    def walk(node: dict[str, Any], x: float, depth: int) -> None:
        nonlocal depth_max
        for frame, kid in sorted(node["kids"].items()):
            w = WIDTH * kid["n"] / total
            if w >= MIN_PX:
                depth_max = max(depth_max, depth)
                y = depth * ROW
                label = html.escape(frame)
                pct = 100 * kid["n"] / total
                text = html.escape(frame.split(" (")[0])[: int(w / 7)]
                rects.append(
                    f"<g><title>{label} {kid['n']} samples ({pct:.1f}%)</title>"
                    f'<rect x="{x:.1f}" y="{{Y{y}}}" width="{w:.1f}" height="{ROW - 1}" '
                    f'fill="{_hue(frame)}"/>'
                    f'<text x="{x + 2:.1f}" y="{{T{y}}}" font-size="11">{text}</text></g>'
                )
                walk(kid, x, depth + 1)
            x += w

    walk(root, 0.0, 0)
    height = (depth_max + 3) * ROW
    body = []
    for r in rects:  # icicle drawn upside down: roots at the bottom, as flame graphs are read
        y = int(r.split('y="{Y', 1)[1].split("}", 1)[0])
        top = height - ROW - y - ROW
        body.append(r.replace(f"{{Y{y}}}", str(top)).replace(f"{{T{y}}}", str(top + ROW - 4)))
    path.write_text(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'font-family="monospace"><text x="4" y="12" font-size="12">{html.escape(title)}</text>'
        + "".join(body)
        + "</svg>\n"
    )
