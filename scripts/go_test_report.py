#!/usr/bin/env python3
"""Reads `go test -json` on stdin and prints what `go test` prints without -v (one line per
package, and the whole output of every failed test), then every skipped test with its
reason, so that skips are visible in CI. Exits 1 if a test or package failed."""

from __future__ import annotations

import json
import sys
from collections import defaultdict


def main() -> int:
    output: dict[tuple[str, str], list[str]] = defaultdict(list)
    skipped: list[tuple[str, str, str]] = []
    failed = False
    for line in sys.stdin:
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            print(line, end="")  # build errors come as plain text
            failed = True
            continue
        pkg, test, action = ev.get("Package", ""), ev.get("Test", ""), ev.get("Action")
        key = (pkg, test)
        if action == "output":
            output[key].append(ev["Output"])
        elif action == "skip" and test:
            reason = next((o.strip() for o in reversed(output[key]) if o.strip() and not o.startswith("---")), "")
            skipped.append((pkg, test, reason))
            output.pop(key, None)
        elif action == "pass" and test:
            output.pop(key, None)
        elif action == "fail" and test:
            failed = True
            print("".join(output.pop(key, [])), end="")
        elif action in ("pass", "fail", "skip") and not test:
            if action == "fail":
                failed = True
                print("".join(o for o in output.pop(key, []) if not o.startswith(("=== RUN", "--- PASS"))), end="")
            status = {"pass": "ok  ", "fail": "FAIL", "skip": "?   "}[action]
            print(f"{status}\t{pkg}\t{ev.get('Elapsed', 0):.1f}s")
    print(f"\n--- {len(skipped)} Go tests skipped:")
    for pkg, test, reason in skipped:
        print(f"SKIP {pkg} {test}: {reason}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
