"""How long labelling 100 items by keyboard takes on the ``mitigate label`` page: the page's own latency,
not a person's. Also draws the screenshots of docs/label.md.

    PYTHONPATH=. python benchmarks/label_latency.py [--items 100] [--shots docs/images]

A 4-system benchmark with no labels and a recorded judge are written to a temporary folder; ``mitigate
label --per-system 25`` serves 100 items in its own process; Debian's headless Chromium (over the DevTools
protocol) presses one digit per item and waits until the page shows the next one. Per label, the page's own
latency is from the keydown (a listener the script adds, capture phase) to the next item drawn (the page's
``data-shown-at``), both ``performance.now()`` in the page: the request, the atomic rewrite of the labels file
(fsync'd), the next item's fetch and its drawing. The wall time of the 100 labels adds the protocol's round
trips. Then ``mitigate estimate --labels`` reads the file. Writes benchmarks/results/label_latency.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tests.label.cdp import chromium, screenshot

ROOT = Path(__file__).resolve().parent.parent
SYSTEMS = ("model-a", "model-b", "model-c", "model-d")
QUESTIONS = (
    "Explain why the sky looks blue at noon and red at sunset.",
    "Summarise the causes of the 1929 stock market crash in three sentences.",
    "Write a polite reply declining a meeting invitation for Friday.",
    "What is the difference between a list and a tuple in Python?",
    "Give two arguments for and two against a four-day working week.",
)
ANSWERS = (
    "Sunlight scatters off air molecules, and short (blue) wavelengths scatter most; at sunset the light "
    "crosses more air, so the blue is scattered away before it reaches you and the reds remain.",
    "Shares had been bought on credit far above their value. When prices slipped, margin calls forced "
    "sales, and the selling fed on itself. Banks that had lent on stocks failed in turn.",
    "Thank you for the invitation. I am unable to attend on Friday, but I would be glad to catch up next "
    "week if that suits you.",
    "A list can be changed after it is made; a tuple cannot. Tuples can be dictionary keys.",
    "For: more rest and output per hour. Against: cover for customers, and longer days for some.",
)


def write_task(folder: Path, per_system: int) -> tuple[Path, Path]:
    """A benchmark of SYSTEMS x per_system unlabelled items (1-5 helpfulness) and a recorded judge."""
    rng = np.random.default_rng(0)
    rows, answers = [], []
    for s, system in enumerate(SYSTEMS):
        for k in range(per_system):
            q = k % len(QUESTIONS)
            item_id = f"{system}-{k}"
            text = ANSWERS[q] if (k + s) % 3 else ANSWERS[q].split(".")[0] + "."
            rows.append(
                {
                    "id": item_id,
                    "system": system,
                    "doc_id": f"q{k}",
                    "inputs": {"question": QUESTIONS[q]},
                    "output": text,
                }
            )
            score = float(np.clip(round(4 - 0.5 * s + rng.normal(scale=0.8)), 1, 5))
            answers.append(
                {"item_id": item_id, "judge": "small-judge", "criterion": "helpfulness", "score": score}
            )
    bench = folder / "bench.jsonl"
    head = {"name": "answers", "criteria": ["helpfulness"], "scale": [1, 5]}
    head["description"] = "Rate how helpful the answer is to the question, from 1 (useless) to 5 (ideal)."
    bench.write_text(json.dumps({"benchmark": head}) + "\n" + "".join(json.dumps(r) + "\n" for r in rows))
    recorded = folder / "judged.jsonl"
    recorded.write_text("".join(json.dumps(a) + "\n" for a in answers))
    return bench, recorded


def start(*args: str) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mitigate", "label", *args], stderr=subprocess.PIPE, text=True, env=env
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.strip().startswith("http://127.0.0.1:"):
            return proc, line.strip()
    raise SystemExit(f"mitigate label printed no address (exit {proc.wait()})")


KEYDOWN = (
    "window.__downs=[];document.addEventListener('keydown',()=>window.__downs.push(performance.now()),true);"
)


async def label_all(url: str, keys: list[str]) -> dict:
    async with chromium() as page:
        await page.goto(url)
        await page.wait_for("document.body.dataset.position !== undefined")
        await page.evaluate(KEYDOWN)
        page_ms, wall_ms = [], []
        started = time.perf_counter()
        for key in keys:
            left = int(await page.evaluate("document.body.dataset.left"))
            t0 = time.perf_counter()
            await page.press(key)
            await page.wait_for(f"Number(document.body.dataset.left) === {left - 1}")
            shown = float(await page.evaluate("document.body.dataset.shownAt"))
            down = float(await page.evaluate("window.__downs[window.__downs.length - 1]"))
            page_ms.append(shown - down)
            wall_ms.append((time.perf_counter() - t0) * 1000)
        total = time.perf_counter() - started
    return {"page_ms": page_ms, "wall_ms": wall_ms, "total_s": total}


def shrink(path: Path) -> None:
    """Crop the empty page below the content, and save the PNG in 64 colours."""
    from PIL import Image, ImageChops

    image = Image.open(path).convert("RGB")
    background = Image.new("RGB", image.size, image.getpixel((image.width - 1, image.height - 1)))
    box = ImageChops.difference(image, background).getbbox()
    if box:
        image = image.crop((0, 0, image.width, min(image.height, box[3] + 24)))
    image.quantize(colors=64, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        path, optimize=True
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100, help="items to label (a multiple of 4)")
    parser.add_argument("--shots", type=Path, default=None, help="also draw the docs' screenshots here")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "label_latency.json")
    a = parser.parse_args()
    per = a.items // len(SYSTEMS)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        bench, recorded = write_task(folder, per_system=2 * per)
        labels = folder / "labels.jsonl"
        args = [
            "-b",
            f"jsonl:{bench}",
            "--per-system",
            str(per),
            "-o",
            str(labels),
            "--recorded",
            str(recorded),
        ]
        proc, url = start(*args, "--labeller", "bench", "--plan", "0.5")
        try:
            if a.shots:
                a.shots.mkdir(parents=True, exist_ok=True)
                shrink(screenshot(url, a.shots / "label_page.png", size="1100,760"))
            # a labeller who mostly agrees with the judge, less so on model-d (the script reads the order from
            # the labels file; the page itself never says which item is which)
            judged = {a["item_id"]: a["score"] for a in map(json.loads, recorded.read_text().splitlines())}
            order = [json.loads(line)["id"] for line in labels.read_text().splitlines()]
            rng = np.random.default_rng(1)
            keys = [
                str(int(np.clip(round(judged[i] + rng.normal(scale=0.6) + (0.8 if "-d-" in i else 0)), 1, 5)))
                for i in order
            ]
            run = asyncio.run(label_all(url, keys))
            if a.shots:
                agreement = url.replace("/?t=", "/agreement?t=")
                shrink(screenshot(agreement, a.shots / "label_agreement.png", size="1100,1500"))
        finally:
            proc.terminate()
            proc.wait()
        rows = [json.loads(line) for line in labels.read_text().splitlines()]
        assert all(r["labels"]["helpfulness"] is not None for r in rows), "an item was left unlabelled"
        est = subprocess.run(
            [
                sys.executable,
                "-m",
                "mitigate",
                "estimate",
                "-b",
                f"jsonl:{bench}",
                "--recorded",
                str(recorded),
            ]
            + ["--labels", str(labels), "--json"],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        if est.returncode:
            raise SystemExit(f"mitigate estimate refused the labels file: {est.stderr.strip()}")
        groups = json.loads(est.stdout.splitlines()[0])["groups"]
    page, wall = run["page_ms"], run["wall_ms"]
    result = {
        "command": "PYTHONPATH=. python benchmarks/label_latency.py " + " ".join(sys.argv[1:]),
        "items": len(page),
        "page_ms": {
            "median": statistics.median(page),
            "p90": float(np.percentile(page, 90)),
            "max": max(page),
            "sum_s": sum(page) / 1000,
        },
        "wall_ms_per_label": {"median": statistics.median(wall), "p90": float(np.percentile(wall, 90))},
        "total_s": run["total_s"],
        "estimate_groups": {g["group"]: g["n_labelled"] for g in groups},
        "machine": f"{platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}",
    }
    a.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
