"""The reproduction tables of the README and docs/reproduction.md, as last computed.

``python docs/_ext/reproduction_tables.py [--run]`` (``make tables``):

* with ``--run``, computes ``neuromanifold reproduce all --json`` (seed 0, the full run,
  a few minutes) into ``docs/reproduction_last_run.json``;
* then rewrites every block marked ``<!-- table: linear -->`` or ``<!-- table: relu -->``
  (up to ``<!-- /table -->``) in README.md and docs/reproduction.md from that JSON.

The tables are never edited by hand: tests/docs/test_site.py renders the committed JSON again
and fails when a block differs, and checks that the JSON's rows still have the fields the
current ``Row`` has.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAST_RUN = ROOT / "docs" / "reproduction_last_run.json"
PAGES = [ROOT / "README.md", ROOT / "docs" / "reproduction.md"]
BLOCK = re.compile(r"(<!-- table: (linear|relu) -->\n)(.*?)(<!-- /table -->)", re.S)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render(rows: list[dict]) -> str:
    """A Markdown table of reproduction rows (dicts of ``Row.to_dict()``), refined rows
    marked with '...', and the closing count of outcomes."""
    lines = [
        "| architecture | condition | paper's claim | computed | outcome |",
        "|---|---|---|---|---|",
    ]
    counts = {"rows": {}, "claims": {}}
    for r in rows:
        refined = "refines" in (r.get("evidence") or {})
        cond = ("... " if refined else "") + r["condition"]
        lines.append(
            "| "
            + " | ".join(
                _cell(x)
                for x in (r["architecture"], cond, r["paper_claim"], r["computed"], r["outcome"])
            )
            + " |"
        )
        counts["rows"][r["outcome"]] = counts["rows"].get(r["outcome"], 0) + 1
        if not refined:
            counts["claims"][r["outcome"]] = counts["claims"].get(r["outcome"], 0) + 1

    def words(c: dict) -> str:
        return ", ".join(
            f"{c.get(k, 0)} {k}"
            for k in ("agrees", "disagrees", "outside the hypotheses", "inconclusive")
        )

    n, m = sum(counts["rows"].values()), sum(counts["claims"].values())
    lines += [
        "",
        f"{n} rows: {words(counts['rows'])}. The paper's {m} claims (refinements, "
        f"marked '...', left out): {words(counts['claims'])}.",
    ]
    return "\n".join(lines) + "\n"


def load_last_run(path: Path = LAST_RUN) -> dict:
    """The committed run: ``{"linear": [...], "relu": [...]}``."""
    return json.loads(path.read_text())


def expected_page(text: str, run: dict) -> str:
    """``text`` with every marked table block re-rendered from ``run``."""
    return BLOCK.sub(lambda m: m.group(1) + render(run[m.group(2)]) + m.group(4), text)


def slim(run: dict) -> dict:
    """The run without the per-instance evidence (megabytes): each row keeps its fields,
    its evidence summary and whether it refines another row."""
    out = {}
    for table, rows in run.items():
        out[table] = []
        for r in rows:
            ev = r.get("evidence") or {}
            r = dict(r, evidence={k: ev[k] for k in ("summary", "refines") if k in ev})
            if "counterexample" in ev:  # the witness's architecture and why, not its data
                c = ev["counterexample"]
                r["evidence"]["counterexample"] = {
                    k: c[k] for k in ("architecture", "why") if k in c
                }
            out[table].append(r)
    return out


def main(argv: list[str]) -> int:
    if "--run" in argv:
        full = LAST_RUN.with_suffix(".full.json")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "neuromanifold",
                "reproduce",
                "all",
                "--seed",
                "0",
                "--json",
                str(full),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        LAST_RUN.write_text(json.dumps(slim(json.loads(full.read_text())), indent=1) + "\n")
        full.unlink()
    run = load_last_run()
    for page in PAGES:
        text = page.read_text()
        new = expected_page(text, run)
        if new != text:
            page.write_text(new)
            print(f"updated {page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
