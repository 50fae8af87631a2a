"""Draw the screenshots of report.html shown in docs/report.md, with Debian's headless Chromium.

Run the README's quick start first (it writes reports/quickstart), then:

    python benchmarks/report_screenshots.py reports/quickstart docs/images

It rebuilds report.html from results.json (``mitigate report --html``), draws the top of the
page and the per-item view (sorted by disagreement, the first item opened with its prompt),
and saves them as small 64-colour PNGs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from PIL import Image

from mitigate.report import render_report


def shoot(page: Path, fragment: str, out: Path, size: tuple[int, int]) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("expected Debian's chromium (apt-get install chromium); found none")
    with tempfile.TemporaryDirectory() as profile:
        raw = Path(profile) / "shot.png"
        subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--window-size={size[0]},{size[1]}",
                "--virtual-time-budget=3000",
                f"--screenshot={raw}",
                page.resolve().as_uri() + fragment,
            ],
            check=True,
            capture_output=True,
            timeout=180,
        )
        image = Image.open(raw).convert("RGB")
        image.quantize(colors=64, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
            out, optimize=True
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a folder written by 'mitigate compare'")
    parser.add_argument("out", type=Path, help="where the PNGs go")
    args = parser.parse_args()
    render_report(args.folder, html=True)
    page = args.folder / "report.html"
    items = json.loads((args.folder / "results.json").read_text(encoding="utf-8"))["items"]
    args.out.mkdir(parents=True, exist_ok=True)
    shoot(page, "", args.out / "report-html-top.png", (1100, 1160))
    # the item the entries disagree on most is first once sorted; open it by its id
    from mitigate.report import load_results
    from mitigate.report._html import item_view

    rows = item_view(load_results(args.folder))
    top = max(rows, key=lambda r: (r["disagreement"], -r["index"]))
    shoot(
        page,
        f"#sort=disagreement&open={items[top['index']]['id']}&prompt=1&view=items",
        args.out / "report-html-items.png",
        (1100, 1250),
    )
    print(f"wrote {args.out / 'report-html-top.png'}, {args.out / 'report-html-items.png'}")


if __name__ == "__main__":
    main()
