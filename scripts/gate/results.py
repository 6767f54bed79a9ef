"""The results file every gate script writes (docs/conventions.md): one
"pass <name>" or "fail <name> <why>" line a check."""
import pathlib


def write(path, lines):
    """Writes lines to path (its folder made), prints each failure
    indented, and returns the failures."""
    out = pathlib.Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    bad = [line for line in lines if line.startswith("fail")]
    for line in bad:
        print("  " + line)
    return bad
