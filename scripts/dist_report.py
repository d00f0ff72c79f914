"""Print what `make dist` wrote: each file's size and how many files it packs.

Usage: scripts/dist_report.py FILE...   (.whl, .tar.gz, .vsix)
"""

from __future__ import annotations

import sys
import tarfile
import zipfile
from pathlib import Path


def members(path: Path) -> int:
    if path.suffix in (".whl", ".vsix"):
        with zipfile.ZipFile(path) as z:
            return sum(1 for i in z.infolist() if not i.is_dir())
    with tarfile.open(path) as t:
        return sum(1 for m in t.getmembers() if m.isfile())


def main(paths: list[str]) -> None:
    for name in paths:
        path = Path(name)
        size = path.stat().st_size
        print(f"{str(path):44} {size / 1e6:6.2f} MB  {members(path):4} files")


if __name__ == "__main__":
    main(sys.argv[1:])
